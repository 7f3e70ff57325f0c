import Foundation

/// What the receipt route's answer to one batch means for its events: a value computed from the
/// response before the queue is touched, so each rule is tested without a server.
enum ReceiptAnswer: Equatable, Sendable {
    /// 2xx (the route says 202): the gateway has the batch; the events at `refused` it will never
    /// take (a token it did not issue, an expired one), so they are dropped as well.
    case taken(refused: Set<Int>)
    /// 400 (malformed) or 403 (refused tokens): sending again would be refused again; drop.
    case refused(status: Int)
    /// 413: the body is too large; send it in halves.
    case tooLarge
    /// 429, 5xx, and any other status: keep the events and try later, not before `retryAfter`
    /// when the gateway said so. Dropping on a status the route does not document (a proxy's 404
    /// or 401 while the gateway is being deployed) would lose receipts; the queue's age limit
    /// ends the retries instead.
    case retry(retryAfter: Duration?)

    /// The meaning of `response` to a batch of `count` events.
    init(_ response: HeraldResponse, count: Int) {
        switch response.status {
        case 200..<300:
            self = .taken(refused: Self.refusedIndices(response.body, count: count))
        case 400, 403:
            self = .refused(status: response.status)
        case 413:
            self = .tooLarge
        default:
            self = .retry(retryAfter: response.header("Retry-After").flatMap(Self.seconds).map(Duration.seconds))
        }
    }

    /// The indices of `{"taken": n, "refused": [{"index": i, "error": "…"}]}` that are in the
    /// batch; none when the body is not that (the events were taken).
    private static func refusedIndices(_ body: Data, count: Int) -> Set<Int> {
        struct Body: Decodable {
            struct Refusal: Decodable { var index: Int }
            var refused: [Refusal]?
        }
        guard let refused = (try? JSONDecoder().decode(Body.self, from: body))?.refused else { return [] }
        return Set(refused.map(\.index).filter { (0..<count).contains($0) })
    }

    /// `Retry-After` in whole seconds (RFC 9110 §10.2.3); an HTTP-date is not followed (the
    /// back-off applies).
    private static func seconds(_ value: String) -> Int? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard (1...9).contains(trimmed.utf8.count), trimmed.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return Int(trimmed)
    }
}
