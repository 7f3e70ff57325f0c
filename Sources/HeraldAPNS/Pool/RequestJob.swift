import HeraldCore
@_spi(HeraldFlow) import HeraldFlow
import Logging
import NIOCore
import HeraldHTTP2
import HeraldTransport

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One APNs request on its way through the transport's pool: what is sent, its history of
/// attempts and where its outcome goes.
///
/// A job is owned by one place at a time (the pool's queue, one connection's event loop, or a
/// retry timer) and handed over through the pool's lock, so its mutable state is never shared.
final class RequestJob: HTTP2Job, @unchecked Sendable {
    /// What is sent, and who waits for the answer.
    enum Request {
        /// A device notification: its outcome goes to one caller, or into a bulk send.
        case notification(PushNotification, index: Int, Completion)
        /// Channel management or a broadcast (apns-spec §1.9): the answer goes to its caller.
        case other(OtherRequest, CheckedContinuation<RawResponse, any Error>)
    }

    /// Where a notification's outcome goes.
    enum Completion {
        case single(CheckedContinuation<APNSResponse, any Error>)
        case bulk(BulkSink<APNSOutcome>)
    }

    let request: Request
    /// The bulk send this job belongs to, if any: kept apart from ``request`` so that grouping
    /// outcomes by send does not copy the whole request.
    let sink: BulkSink<APNSOutcome>?
    /// Whether a status is a success: 200 for a notification (apns-spec §1.6); 200 to 299 for
    /// channel management and broadcasts (§1.9). Set from ``request`` once: a switch over the
    /// request on every answer copied the notification in it, on the event loop.
    private let successes: ClosedRange<Int>
    let logger: Logger
    /// From apns-expiration: no retry outlives it.
    let expiration: Date?
    var attempts = 0
    var expiredTokenRetries = 0
    var unprocessedResends = 0
    /// The provider token the last attempt carried, to renew exactly that one on `ExpiredProviderToken`.
    var authorization: HTTP2Authorization?
    /// When the client took it.
    let createdAt = NIODeadline.now()
    /// When the current attempt times out: set when the job is queued, so the wait for a stream
    /// counts towards the request timeout.
    var deadline = NIODeadline.distantFuture
    /// Its final result, once the rules judged it (``APNSRules``).
    var result: RetryDecision.FinalResult?

    init(notification: PushNotification, index: Int, completion: Completion, logger: Logger) {
        self.request = .notification(notification, index: index, completion)
        if case .bulk(let sink) = completion { self.sink = sink } else { self.sink = nil }
        self.successes = 200...200
        self.logger = logger
        self.expiration = notification.headers.expiration?.deadline
    }

    init(other: OtherRequest, completion: CheckedContinuation<RawResponse, any Error>, logger: Logger) {
        self.request = .other(other, completion)
        self.sink = nil
        self.successes = 200...299
        self.logger = logger
        self.expiration = other.expiration
    }

    /// Whether `status` is a success for this request.
    func succeeds(with status: Int) -> Bool {
        successes.contains(status)
    }

    func write(streamID: HTTP2StreamNumber, on connection: inout HTTP2Connection, context: HTTP2WriteContext, into output: inout ByteBuffer) {
        switch request {
        case .other(let other, _):
            other.request.write(streamID: streamID, on: &connection, context: context, into: &output)
        case .notification(let notification, _, _):
            let memo = unsafeDowncast(context.state.unsafelyUnwrapped, to: RequestEncoder.Memo.self)
            connection.writeHeaders(streamID: streamID, endStream: false, into: &output) { encoder, block in
                RequestEncoder.writeFields(
                    for: notification, authority: context.authority, authorization: context.authorization, memo: &memo.fields, encoder: &encoder,
                    into: &block
                )
            }
            _ = connection.writeBody(streamID: streamID, notification.payload.bytes, into: &output)
        }
    }

    /// Delivers the final outcome (``result``, or `fallback` when there is none). Called exactly once.
    func complete(_ fallback: RetryDecision.FinalResult? = nil) {
        let result = self.result ?? fallback ?? .failed(APNSClientError(.connectionLost, "the request ended without a result"))
        switch request {
        case .notification(let notification, _, .single(let continuation)):
            switch Self.result(result, for: notification) {
            case .accepted(let response): continuation.resume(returning: response)
            case .rejected(let error): continuation.resume(throwing: error)
            case .failed(let error): continuation.resume(throwing: error)
            }
        case .notification(let notification, let index, .bulk(let sink)):
            sink.deliver(contentsOf: CollectionOfOne(outcome(result, notification: notification, index: index)))
        case .other(_, let continuation):
            switch result {
            case .succeeded(let answer): continuation.resume(returning: answer)
            case .rejected(let error): continuation.resume(throwing: error)
            case .failed(let error): continuation.resume(throwing: error)
            }
        }
    }

    /// The outcome a bulk send yields for `notification`, this job's.
    func outcome(_ result: RetryDecision.FinalResult, notification: PushNotification, index: Int) -> APNSOutcome {
        let elapsed = Duration.nanoseconds((NIODeadline.now() - createdAt).nanoseconds)
        return APNSOutcome(
            notification: notification, index: index, result: Self.result(result, for: notification), attempts: attempts, elapsed: elapsed
        )
    }

    /// A notification's result; accepted with the server's apns-id, else the one it was sent with.
    private static func result(_ result: RetryDecision.FinalResult, for notification: PushNotification) -> APNSOutcome.Result {
        switch result {
        case .succeeded(let answer):
            let apnsID = answer.apnsID?.lowercased() ?? notification.headers.apnsID?.uuidString.lowercased() ?? ""
            return .accepted(APNSResponse(apnsID: apnsID, apnsUniqueID: answer.uniqueID))
        case .rejected(let error): return .rejected(error)
        case .failed(let error): return .failed(error)
        }
    }
}

/// A request other than a device notification: channel management or a broadcast (apns-spec §1.9).
struct OtherRequest: Sendable {
    var request: HTTP2Request
    var expiration: Date?

    init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8]?, expiration: Date?) {
        request = HTTP2Request(method: method, path: path, headers: headers, body: body)
        self.expiration = expiration
    }
}

/// A successful answer from the server, as it came: what a notification's ``APNSResponse`` and a
/// channel or broadcast answer are read from.
struct RawResponse: Sendable, Equatable {
    var status: Int
    var apnsID: String? = nil
    var uniqueID: String? = nil
    var channelID: String?
    var requestID: String?
    var body: [UInt8]

    /// The APNs fields of `answer`.
    init(_ answer: HTTP2Answer) {
        status = answer.status
        body = answer.body
        for field in answer.fields {
            switch field.name {
            case "apns-id": apnsID = field.value
            case "apns-unique-id": uniqueID = field.value
            case "apns-channel-id": channelID = field.value
            case "apns-request-id": requestID = field.value
            default: break
            }
        }
    }

    init(status: Int, apnsID: String? = nil, uniqueID: String? = nil, channelID: String? = nil, requestID: String? = nil, body: [UInt8] = []) {
        self.status = status
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.channelID = channelID
        self.requestID = requestID
        self.body = body
    }
}
