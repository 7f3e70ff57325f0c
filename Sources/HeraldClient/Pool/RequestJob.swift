import HeraldCore
import HeraldFlow
import Logging
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One notification on its way: its history of attempts and where its outcome goes.
///
/// A job is owned by one place at a time (the pool's queue, one connection's event loop, or a
/// retry timer) and handed over through the pool's lock, so its mutable state is never shared.
final class RequestJob: @unchecked Sendable {
    enum Completion {
        case single(CheckedContinuation<APNSResponse, any Error>)
        case bulk(BulkSink<APNSOutcome>)
        /// Channel management and broadcasts: the raw answer.
        case raw(CheckedContinuation<RawResponse, any Error>)
    }

    let notification: PushNotification
    /// Set for requests other than a device notification (channels, broadcasts).
    let other: OtherRequest?
    let index: Int
    let completion: Completion
    let logger: Logger
    /// From apns-expiration: no retry outlives it.
    let expiration: Date?
    var attempts = 0
    var expiredTokenRetries = 0
    var unprocessedResends = 0
    /// The provider token the last attempt carried, to renew exactly that one on `ExpiredProviderToken`.
    var providerToken: ProviderToken?
    /// When the client took it.
    let createdAt = NIODeadline.now()
    /// When the current attempt times out: set when the job is queued, so the wait for a stream
    /// counts towards the request timeout.
    var deadline = NIODeadline.distantFuture

    init(notification: PushNotification, index: Int, completion: Completion, logger: Logger) {
        self.notification = notification
        self.other = nil
        self.index = index
        self.completion = completion
        self.logger = logger
        self.expiration = notification.headers.expiration?.deadline
    }

    init(other: OtherRequest, completion: CheckedContinuation<RawResponse, any Error>, logger: Logger) {
        // A placeholder notification: `other` describes what is sent.
        self.notification = PushNotification(token: try! DeviceToken("00"), headers: PushHeaders(), payload: .emptyObject)
        self.other = other
        self.index = 0
        self.completion = .raw(completion)
        self.logger = logger
        self.expiration = other.expiration
    }

    /// Delivers the final outcome. Called exactly once.
    func complete(_ result: RetryDecision.FinalResult) {
        switch completion {
        case .single(let continuation):
            switch result {
            case .accepted(let response): continuation.resume(returning: response)
            case .rejected(let error): continuation.resume(throwing: error)
            case .failed(let error): continuation.resume(throwing: error)
            case .answered: preconditionFailure("a notification is answered with accepted")
            }
        case .raw(let continuation):
            switch result {
            case .answered(let response): continuation.resume(returning: response)
            case .rejected(let error): continuation.resume(throwing: error)
            case .failed(let error): continuation.resume(throwing: error)
            case .accepted: preconditionFailure("a raw request is answered with answered")
            }
        case .bulk(let sink):
            sink.deliver(contentsOf: CollectionOfOne(outcome(result)))
        }
    }

    /// The outcome a bulk send yields for this notification.
    func outcome(_ result: RetryDecision.FinalResult) -> APNSOutcome {
        let outcome: APNSOutcome.Result
        switch result {
        case .accepted(let response): outcome = .accepted(response)
        case .rejected(let error): outcome = .rejected(error)
        case .failed(let error): outcome = .failed(error)
        case .answered: preconditionFailure("bulk sends carry notifications")
        }
        let elapsed = Duration.nanoseconds((NIODeadline.now() - createdAt).nanoseconds)
        return APNSOutcome(notification: notification, index: index, result: outcome, attempts: attempts, elapsed: elapsed)
    }
}

/// A request other than a device notification: channel management or a broadcast (apns-spec §1.9).
struct OtherRequest: Sendable {
    var method: String
    var path: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]?
    var expiration: Date?
}

/// A successful answer to an ``OtherRequest``.
struct RawResponse: Sendable, Equatable {
    var status: Int
    var channelID: String?
    var requestID: String?
    var body: [UInt8]
}

extension EncodedPayload {
    /// `{}`.
    static let emptyObject = try! EncodedPayload(validating: "{}")
}
