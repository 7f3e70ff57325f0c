import HeraldCore
@_spi(HeraldFlow) import HeraldFlow
import Logging
import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One request on its way: what is sent, its history of attempts and where its outcome goes.
///
/// A job is owned by one place at a time (the pool's queue, one connection's event loop, or a
/// retry timer) and handed over through the pool's lock, so its mutable state is never shared.
final class RequestJob: @unchecked Sendable {
    /// What is sent, and who waits for the answer.
    enum Request {
        /// A device notification: its outcome goes to one caller, or into a bulk send.
        case notification(PushNotification, index: Int, Completion)
        /// Channel management or a broadcast (apns-spec §1.9), or another protocol's request
        /// (`APNSClient.exchange(_:logger:)`): the raw answer goes to the caller.
        case other(OtherRequest, OtherCompletion)
    }

    /// Where the answer to an ``Request/other(_:_:)`` request goes.
    enum OtherCompletion {
        /// To one caller.
        case single(CheckedContinuation<RawResponse, any Error>)
        /// Into a batch's place `index` (`APNSClient.exchange(_:logger:)`).
        case batch(ExchangeBatch, index: Int)
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
    /// The exchange batch this job answers into, and its place there, if any: kept apart from
    /// ``request`` for the same reason (reading it out of ``request`` copies the request, a
    /// retain of each of its parts).
    let batch: (owner: ExchangeBatch, index: Int)?
    /// Which statuses ``succeeds(with:)`` takes, set from ``request`` once: a switch over the
    /// request on every answer copied the notification in it, on the event loop.
    private let successes: Successes
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
        self.request = .notification(notification, index: index, completion)
        if case .bulk(let sink) = completion { self.sink = sink } else { self.sink = nil }
        self.batch = nil
        self.successes = .ok
        self.logger = logger
        self.expiration = notification.headers.expiration?.deadline
    }

    init(other: OtherRequest, completion: CheckedContinuation<RawResponse, any Error>, logger: Logger) {
        self.request = .other(other, .single(completion))
        self.sink = nil
        self.batch = nil
        self.successes = Successes(other)
        self.logger = logger
        self.expiration = other.expiration
    }

    init(other: OtherRequest, batch: ExchangeBatch, index: Int, logger: Logger) {
        self.request = .other(other, .batch(batch, index: index))
        self.sink = nil
        self.batch = (batch, index)
        self.successes = Successes(other)
        self.logger = logger
        self.expiration = other.expiration
    }

    /// Whether `status` is a success for this request: 200 for a notification (apns-spec §1.6);
    /// 200, 201 or 204 for channel management and broadcasts (§1.9).
    func succeeds(with status: Int) -> Bool {
        switch successes {
        case .ok: status == 200
        case .any2xx: (200..<300).contains(status)
        case .any: true
        }
    }

    /// The statuses a request succeeds with.
    private enum Successes {
        /// 200: a notification.
        case ok
        /// 200 to 299: channel management and broadcasts.
        case any2xx
        /// Every status: a passthrough request, whose caller reads the answer.
        case any

        init(_ other: OtherRequest) {
            self = other.passthrough ? .any : .any2xx
        }
    }

    /// Delivers the final outcome. Called exactly once.
    func complete(_ result: RetryDecision.FinalResult) {
        switch request {
        case .notification(let notification, _, .single(let continuation)):
            switch Self.result(result, for: notification) {
            case .accepted(let response): continuation.resume(returning: response)
            case .rejected(let error): continuation.resume(throwing: error)
            case .failed(let error): continuation.resume(throwing: error)
            }
        case .notification(let notification, let index, .bulk(let sink)):
            sink.deliver(contentsOf: CollectionOfOne(outcome(result, notification: notification, index: index)))
        case .other(_, .single(let continuation)):
            switch result {
            case .succeeded(let answer): continuation.resume(returning: answer)
            case .rejected(let error): continuation.resume(throwing: error)
            case .failed(let error): continuation.resume(throwing: error)
            }
        case .other(_, .batch(let batch, let index)):
            batch.deliver(Self.answer(result), at: index)
        }
    }

    /// A batch's answer for `result`.
    static func answer(_ result: RetryDecision.FinalResult) -> ExchangeBatch.Answer {
        switch result {
        case .succeeded(let answer): .success(answer)
        case .rejected(let error): .failure(error)
        case .failed(let error): .failure(error)
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
    var method: String
    var path: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]?
    var expiration: Date?
    /// Every answer, whatever its status, is the caller's: no retry decision is made on it (the
    /// caller speaks another protocol over this pool: Web Push). Lost streams and timeouts still
    /// fail as the client's errors.
    var passthrough = false
    /// The head this request shares with others (FCM's): when set, its fields are written
    /// instead of ``headers``; ``method`` and ``path`` are its own.
    var sharedHead: SharedRequestHead?
}

/// A successful answer from the server, as it came: what a notification's ``APNSResponse`` and a
/// channel or broadcast answer are read from.
struct RawResponse: Sendable, Equatable {
    var status: Int
    var apnsID: String? = nil
    var uniqueID: String? = nil
    var channelID: String?
    var requestID: String?
    /// `location` and `retry-after`, for passthrough requests (Web Push answers with them).
    var location: String? = nil
    var retryAfter: String? = nil
    var body: [UInt8]
}

/// The answers of a batch of requests sent together (`APNSClient.exchange(_:logger:)`): each
/// job delivers its own, giving back its in-flight permit, and the caller waits once for all.
final class ExchangeBatch: Sendable {
    typealias Answer = Result<RawResponse, any Error>

    private struct State {
        var answers: [Answer?]
        var remaining: Int
        var waiter: CheckedContinuation<[Answer], Never>?

        /// The answer at `index`, unless one came already (or there is no such request).
        mutating func record(_ answer: Answer, at index: Int) {
            guard answers.indices.contains(index), answers[index] == nil else { return }
            answers[index] = answer
            remaining -= 1
        }
    }

    private let state: Mutex<State>
    private let limiter: InFlightLimiter

    init(count: Int, limiter: InFlightLimiter) {
        state = Mutex(State(answers: Array(repeating: nil, count: count), remaining: count))
        self.limiter = limiter
    }

    /// The answer of the request at `index`; `holdsPermit`: it was sent (it took a permit).
    func deliver(_ answer: Answer, at index: Int, holdsPermit: Bool = true) {
        if holdsPermit { limiter.release() }
        record { $0.record(answer, at: index) }
    }

    /// Answers of requests that were sent (each took a permit): one lock and one release of
    /// permits for all of them, as a connection's read burst ends them together.
    func deliver(contentsOf answers: [(index: Int, answer: Answer)]) {
        guard !answers.isEmpty else { return }
        limiter.release(answers.count)
        record { state in
            for (index, answer) in answers { state.record(answer, at: index) }
        }
    }

    /// Records answers under the lock (`body`), then resumes the waiter if that was the last.
    private func record(_ body: (inout State) -> Void) {
        let done = state.withLock { state -> (CheckedContinuation<[Answer], Never>, [Answer])? in
            body(&state)
            guard state.remaining == 0, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter, state.answers.map { $0! })
        }
        if let (waiter, answers) = done { waiter.resume(returning: answers) }
    }

    /// Every answer, in the requests' order, once all have come.
    func wait() async -> [Answer] {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> [Answer]? in
                if state.remaining == 0 { return state.answers.map { $0! } }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
