import HTTPTypes
import HeraldCore
import HeraldStore
import Hummingbird
import NIOCore

/// `POST /v1/receipts`: what devices report about the notifications they were sent (docs/receipts.md).
///
/// No API key: the receipt token is the only credential, and it names exactly one delivery. It
/// is the one route open to any origin (CORS), since a browser's service worker reports from
/// the site's origin. Every refusal is a 4xx that says which receipt and why; a forged token and
/// one for a device no longer registered are refused alike.
struct ReceiptRoutes {
    let api: GatewayAPI
    let ingester: ReceiptIngester
    let throttle: ReceiptThrottle

    /// The most bytes of a request's body, and of receipts in one request.
    static let maximumBodySize = 32 * 1024
    static let maximumEvents = 100

    func add(to router: Router<GatewayContext>) {
        router.post("v1/receipts", use: receive)
        router.on("v1/receipts", method: .options) { _, _ in Self.preflight() }
    }

    /// Any origin may send receipts; no credentials (cookies) are sent or wanted.
    static func withCORS(_ response: Response) -> Response {
        var response = response
        response.headers[.accessControlAllowOrigin] = "*"
        return response
    }

    static func preflight() -> Response {
        var headers = HTTPFields()
        headers[.accessControlAllowOrigin] = "*"
        headers[.accessControlAllowMethods] = "POST, OPTIONS"
        headers[.accessControlAllowHeaders] = "Content-Type"
        headers[.accessControlMaxAge] = "86400"
        return Response(status: .noContent, headers: headers)
    }

    @Sendable func receive(request: Request, context: GatewayContext) async throws -> Response {
        // Every answer, a database's failure too, carries CORS: a page must be able to read a
        // 503's Retry-After.
        do {
            return Self.withCORS(try await take(request, from: context.peer))
        } catch {
            let (answer, isInternal) = APIError.from(error)
            if isInternal { context.logger.error("a receipt request failed", metadata: ["error": "\(error)"]) }
            return Self.withCORS(answer.response())
        }
    }

    private func take(_ request: Request, from peer: Int?) async throws -> Response {
        // An address over its rate is refused before its body is read, and only after a pause:
        // its connections then send a request a second each, not as fast as the gateway answers
        // (which cost it a core against a flood, though every answer was a 429).
        if let wait = throttle.take(0, from: peer) {
            try? await Task.sleep(for: Self.pause)
            throw Self.slowDown(wait)
        }
        // Read whatever the content type (a service worker sends text/plain to need no preflight).
        let fields = try await JSONBody.object(of: request, limit: Self.maximumBodySize)
        let items: [ReceiptIngester.Incoming]
        do throws(FieldError) {
            items = try Self.receipts(fields)
        } catch {
            throw error.apiError
        }
        if let wait = throttle.take(items.count, from: peer) {
            try? await Task.sleep(for: Self.pause)
            throw Self.slowDown(wait)
        }
        guard await ingester.hasRoom(for: items.count) else { throw Self.busy() }
        let verdicts: [ReceiptIngester.Verdict]
        do {
            verdicts = try await ingester.take(items)
        } catch is ReceiptBacklogFull {
            throw Self.busy()
        }
        let refused = verdicts.enumerated().compactMap { index, verdict -> (Int, ReceiptToken.Refusal)? in
            if case .refused(let refusal) = verdict { return (index, refusal) }
            return nil
        }
        if refused.count == items.count, let first = refused.first {
            let what = items.count == 1 ? "the receipt was refused" : "every receipt was refused (the first: \(Self.explain(first.1)))"
            return APIError(.forbidden, "receiptRefused", items.count == 1 ? "\(what): \(Self.explain(first.1))" : what).response()
        }
        return JSONBody.object(.accepted) { writer in
            writer.member("taken", items.count - refused.count)
            writer.key("refused")
            writer.beginArray()
            for (index, refusal) in refused {
                writer.beginObject()
                writer.member("index", index)
                writer.member("error", refusal.rawValue)
                writer.endObject()
            }
            writer.endArray()
        }
    }

    /// How long a request over its address's rate waits for its 429: the connections of one
    /// address are bounded (`limits.maximumConnectionsPerAddress`), so this bounds its requests.
    static let pause: Duration = .seconds(1)

    /// 429: this address reported more receipts than `limits.receiptsPerSecondPerAddress`.
    static func slowDown(_ wait: Duration) -> APIError {
        APIError.tooManyRequests(
            "this address reported receipts faster than the gateway takes from one address; send them again after Retry-After",
            retryAfter: max(1, Int(wait.components.seconds) + 1))
    }

    static func busy() -> APIError {
        APIError.tooManyRequests("too many receipts are waiting to be stored; send them again shortly", retryAfter: 1)
    }

    static func explain(_ refusal: ReceiptToken.Refusal) -> String {
        switch refusal {
        case .malformed: "malformed (a receipt is the 48 characters of the notification's \"herald\" value)"
        case .forged: "not a receipt of this gateway (forged, altered, or for a device no longer registered)"
        case .expired: "expired (older than its app takes receipts, receipts.lifetimeSeconds)"
        case .disabled: "its app does not take receipts"
        }
    }

    /// `{"receipt", "event", "action"}` or `{"events": [...]}`, checked: the error names the field.
    static func receipts(_ fields: JSONFields) throws(FieldError) -> [ReceiptIngester.Incoming] {
        if fields.has("events") {
            try fields.only(["events"])
            let events = try fields.objects("events")
            guard !events.isEmpty else { throw FieldError(fields.at("events"), "must hold 1 to \(maximumEvents) receipts") }
            guard events.count <= maximumEvents else { throw FieldError(fields.at("events"), "at most \(maximumEvents) receipts in one request; send the rest in another") }
            var items: [ReceiptIngester.Incoming] = []
            for event in events { items.append(try receipt(event)) }
            return items
        }
        return [try receipt(fields)]
    }

    private static func receipt(_ fields: JSONFields) throws(FieldError) -> ReceiptIngester.Incoming {
        try fields.only(["receipt", "event", "action"])
        guard let receipt = try fields.string("receipt") else { throw FieldError(fields.at("receipt"), "is required: the notification's \"herald\" value") }
        guard receipt.utf8.count <= 256 else { throw FieldError(fields.at("receipt"), "must be a receipt: 48 characters") }
        guard let text = try fields.string("event") else { throw FieldError(fields.at("event"), "is required: received, opened, dismissed or clicked") }
        guard let event = ReceiptEvent(rawValue: text) else {
            throw FieldError(fields.at("event"), "must be received, opened, dismissed or clicked, not \(String(reflecting: PeerText(text, limit: 32).description))")
        }
        let action = try fields.string("action") ?? ""
        guard action.utf8.count <= ReceiptRecord.maximumActionLength, PeerText.isSafe(action[...]) else {
            throw FieldError(fields.at("action"), "must be at most \(ReceiptRecord.maximumActionLength) bytes without control characters")
        }
        guard action.isEmpty || event == .clicked else { throw FieldError(fields.at("action"), "is for clicked only") }
        return ReceiptIngester.Incoming(receipt: receipt, event: event, action: action)
    }
}
