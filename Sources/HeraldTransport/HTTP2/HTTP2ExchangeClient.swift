@_spi(HeraldFlow) import HeraldFlow
import HeraldHTTP2
import Logging
import NIOCore
import Synchronization

/// An HTTP/2 client whose every answer, whatever its status, is its caller's: the Web Push and
/// FCM clients send through it and decide on the answers themselves (`WebPushDecision`,
/// `FCMDecision`). It re-sends only what the server did not process (REFUSED_STREAM, above a
/// GOAWAY's last stream); a lost stream or a timeout is that request's ``TransportError``.
package final class HTTP2ExchangeClient: Sendable {
    private let client: HTTP2Client
    private let limiter: InFlightLimiter
    private let logger: Logger

    /// - Parameter maximumInFlight: requests in flight at most; sending suspends at the bound.
    /// - Throws: ``TransportError/Code/tlsFailed`` when the TLS configuration cannot be built.
    package init(
        configuration: HTTP2Client.Configuration, maximumInFlight: Int, eventLoopGroup: any EventLoopGroup, logger: Logger
    ) throws(TransportError) {
        limiter = InFlightLimiter(limit: max(1, maximumInFlight))
        self.logger = logger
        client = try HTTP2Client(configuration: configuration, rules: ExchangeRules(), eventLoopGroup: eventLoopGroup, logger: logger)
    }

    /// Sends `request` and returns its answer, whatever the status.
    package func exchange(_ request: HTTP2Request, logger: Logger? = nil) async -> Result<HTTPAnswer, TransportError> {
        await exchange([request], logger: logger)[0]
    }

    /// Sends every one of `requests` at once (as many as the in-flight bound lets at a time) and
    /// returns each answer, in order, whatever its status: one wake of the connections per group
    /// rather than per request.
    package func exchange(_ requests: [HTTP2Request], logger base: Logger? = nil) async -> [Result<HTTPAnswer, TransportError>] {
        guard !requests.isEmpty else { return [] }
        let logger = base ?? self.logger
        let batch = ExchangeBatch(count: requests.count, limiter: limiter)
        var next = 0
        while next < requests.count {
            let granted: Int
            do {
                granted = try await limiter.acquire(maximum: requests.count - next)
            } catch {
                let failure = TransportError(.shutdown, "the send was cancelled while it waited for room in flight")
                for index in next..<requests.count { batch.deliver(.failure(failure), at: index, holdsPermit: false) }
                break
            }
            let jobs: [any HTTP2Job] = (next..<(next + granted)).map { index in
                ExchangeJob(request: requests[index], batch: batch, index: index, logger: logger)
            }
            if !client.submit(jobs) {
                let failure = TransportError(.shutdown, "the client is shutting down")
                for case let job as ExchangeJob in jobs { batch.deliver(.failure(failure), at: job.index) }
            }
            next += granted
        }
        return await batch.wait()
    }

    /// Stops taking requests, waits for those in flight, closes the connections.
    package func shutdown() async {
        await client.shutdown()
    }

    /// Connections open or opening now.
    package var connectionCount: Int { client.connectionCount }
}

/// A request as it is written, whatever its platform: its method, path, header fields and body,
/// or a head it shares with many (``SharedRequestHead``). A Web Push message, an FCM message, an
/// APNs channel-management request.
package struct HTTP2Request: Sendable {
    package var method: String
    package var path: String
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]?
    /// When set, its fields are written instead of ``headers``.
    package var sharedHead: SharedRequestHead?

    /// A request with its own header list.
    package init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8]?) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// A request with a head it shares with others (FCM's `messages:send`): no header list is
    /// made for each.
    package init(_ head: SharedRequestHead, body: [UInt8]) {
        self.init(method: head.method, path: head.path, headers: [], body: body)
        sharedHead = head
    }

    /// Writes the request's HEADERS, and its DATA when it has a body.
    package func write(streamID: HTTP2StreamNumber, on connection: inout HTTP2Connection, context: HTTP2WriteContext, into output: inout ByteBuffer) {
        connection.writeHeaders(streamID: streamID, endStream: body == nil, into: &output) { encoder, block in
            writeFields(authority: context.authority, authorization: context.authorization, encoder: &encoder, into: &block)
        }
        if let body { _ = connection.writeBody(streamID: streamID, body, into: &output) }
    }

    /// The header fields: the pseudo-header fields, then the request's own, each literal.
    private func writeFields(authority: String, authorization: ByteBuffer?, encoder: inout HPACKBlockEncoder, into block: inout ByteBuffer) {
        if let sharedHead {
            sharedHead.writeFields(bodyCount: body?.count, authority: authority, authorization: authorization, encoder: &encoder, into: &block)
            return
        }
        SharedRequestHead.writeMethod(method, encoder: &encoder, into: &block)
        encoder.indexed(HPACKBlockEncoder.Static.schemeHTTPS, into: &block)
        encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.path, value: path, into: &block)
        encoder.indexing(name: ":authority", value: authority, staticNameIndex: HPACKBlockEncoder.Static.authority, into: &block)
        if var authorization { block.writeBuffer(&authorization) }
        for field in headers {
            encoder.literal(name: field.name, value: field.value, into: &block)
        }
    }
}

/// One exchange on its way: its request, and its place in the batch that waits for it.
private final class ExchangeJob: HTTP2Job, @unchecked Sendable {
    let request: HTTP2Request
    let batch: ExchangeBatch
    let index: Int
    let logger: Logger
    var attempts = 0
    var deadline = NIODeadline.distantFuture
    var authorization: HTTP2Authorization?
    /// Re-sends after the server did not process it.
    var unprocessedResends = 0
    /// Its final result, once judged.
    var result: Result<HTTPAnswer, TransportError>?

    init(request: HTTP2Request, batch: ExchangeBatch, index: Int, logger: Logger) {
        self.request = request
        self.batch = batch
        self.index = index
        self.logger = logger
    }

    func write(streamID: HTTP2StreamNumber, on connection: inout HTTP2Connection, context: HTTP2WriteContext, into output: inout ByteBuffer) {
        request.write(streamID: streamID, on: &connection, context: context, into: &output)
    }
}

/// Every answer is the caller's; only an unprocessed request is sent again, a bounded number of times.
private struct ExchangeRules: HTTP2Rules {
    /// Unprocessed re-sends are free (the server never saw the request) but bounded, so a server
    /// that refuses every stream cannot loop a request forever.
    static let maximumUnprocessedResends = 16

    func currentAuthorization() throws(TransportError) -> HTTP2Authorization? { nil }

    func makeConnectionState() -> AnyObject? { nil }

    func judge(_ attempt: HTTP2Attempt, of job: any HTTP2Job) -> HTTP2Verdict {
        let job = unsafeDowncast(job, to: ExchangeJob.self)
        switch attempt {
        case .answered(let answer):
            job.result = .success(answer.httpAnswer)
        case .unprocessed:
            if job.unprocessedResends < Self.maximumUnprocessedResends {
                job.unprocessedResends += 1
                job.attempts -= 1  // never reached the server
                return .retry(after: .zero, avoidConnection: false)
            }
            job.result = .failure(TransportError(.connectionLost, "the server refused the request \(job.unprocessedResends + 1) times without processing it"))
        case .lost(let why):
            job.result = .failure(TransportError(.connectionLost, why))
        case .timedOut:
            job.result = .failure(TransportError(.timedOut, "no answer within the request timeout"))
        }
        return .done
    }

    func fail(_ job: any HTTP2Job, _ error: TransportError) {
        unsafeDowncast(job, to: ExchangeJob.self).result = .failure(error)
    }

    func finished(_ jobs: [any HTTP2Job]) {
        var index = 0
        while index < jobs.count {
            // A batch's answers together: one lock and one release of permits.
            let batch = unsafeDowncast(jobs[index], to: ExchangeJob.self).batch
            var answers: [(index: Int, answer: ExchangeBatch.Answer)] = []
            while index < jobs.count, case let job = unsafeDowncast(jobs[index], to: ExchangeJob.self), job.batch === batch {
                answers.append((job.index, job.result ?? .failure(TransportError(.connectionLost, "the request ended without a result"))))
                index += 1
            }
            batch.deliver(contentsOf: answers)
        }
    }
}

/// The answers of a batch of requests sent together: each job delivers its own, giving back its
/// in-flight permit, and the caller waits once for all.
private final class ExchangeBatch: Sendable {
    typealias Answer = Result<HTTPAnswer, TransportError>

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
