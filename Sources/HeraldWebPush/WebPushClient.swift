import HeraldTransport
import HeraldCore
@_spi(HeraldFlow) import HeraldFlow
import HeraldIdentity
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Sends Web Push messages (RFC 8030) to browsers' push services: encrypts each message for its
/// subscription (RFC 8291), signs with VAPID (RFC 8292, one token per push service), and keeps
/// connections per push-service origin: HTTP/2 where the service offers it by ALPN (Apple's,
/// Google's and Mozilla's do), on Herald's own HTTP/2 pool (the APNs client's: measured many
/// times cheaper per request than a general HTTP client); HTTP/1.1 keep-alive otherwise, on
/// Herald's HTTP/1.1 client. Endpoints go through ``Configuration/subscriptionPolicy`` before
/// any request and again at every connect, with the address their name resolved to.
///
/// `send` waits while ``Configuration/maximumInFlight`` messages are outstanding (back-pressure),
/// retries 429, 5xx, timeouts and unreachable services with back-off and `Retry-After`, and
/// throws ``WebPushSendError`` for anything else: ``WebPushSendError/isSubscriptionGone`` for
/// 404/410, the service's reason for 400/403 (`BadJwtToken`, …).
///
/// Call ``shutdown()`` when done, or use ``withWebPushClient(configuration:logger:_:)``.
public final class WebPushClient: Sendable {
    /// How the client connects, signs, bounds and retries.
    public struct Configuration: Sendable {
        /// Signs every request; one per application server key and contact.
        public var vapid: VAPIDSigner
        /// Messages outstanding at once, across every push service; `send` waits past it.
        public var maximumInFlight: Int = 1000
        /// HTTP/1.1 connections kept per push service (HTTP/2 multiplexes on one).
        public var maximumHTTP1ConnectionsPerOrigin: Int = 8
        /// Whether HTTP/2 is offered by ALPN (`true`), or HTTP/1.1 only.
        public var allowsHTTP2 = true
        /// The deadline of each attempt, from sending to the answer's end.
        public var requestTimeout: Duration = .seconds(30)
        /// The deadline for a connection (TCP and TLS).
        public var connectTimeout: Duration = .seconds(10)
        /// Retries of 429, 5xx, timeouts and unreachable services.
        public var retry: WebPushRetryPolicy = .default
        /// Certificates to trust besides the system's: a mock's CA, in tests.
        public var additionalTrustRoots: [NIOSSLCertificate] = []
        /// Which endpoints may be sent to: the known push services and the hosts it allows,
        /// never a private network's address unless it says so (checked before each message and
        /// at each connect); `http:` loopback only for tests.
        public var subscriptionPolicy: WebPushSubscription.Policy = .standard
        /// Dimensions added to the HTTP/2 transport's metrics (`herald_webpush_sent_total`,
        /// `_retried_total`, `_connections_opened_total`, `_connections_closed_total`,
        /// `herald_webpush_latency`), e.g. `[("app", "shop")]`.
        public var metricsDimensions: [(String, String)] = []
        /// Where those metrics go; `nil` (default): the global `MetricsSystem.factory`.
        public var metricsFactory: (any MetricsFactory)?

        public init(vapid: VAPIDSigner) { self.vapid = vapid }
    }

    /// The longest answer body read: push services answer with a short JSON reason.
    static let maximumAnswerCount = 8192

    /// At most this many push-service origins get an HTTP/2 pool of their own; past it, the
    /// others go over HTTP/1.1. Browsers use a handful; the bound is against made-up endpoints.
    public static let maximumHTTP2Origins = 32

    public let configuration: Configuration
    private let http: HTTP1Client
    private let limiter: InFlightLimiter
    private let logger: Logger
    private let eventLoopGroup: any EventLoopGroup
    private let isShutDown = Atomic<Bool>(false)
    /// The HTTP/2 pool of each origin that speaks it; `nil`: it refused h2 by ALPN (HTTP/1.1).
    private let transports = Mutex<[String: HTTP2ExchangeClient?]>([:])
    /// The HTTP/2 transport's metrics, shared by every origin's pool.
    private let metrics: TransportMetrics

    /// A client. Shut it down with ``shutdown()``.
    public init(configuration: Configuration, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger = Logger(label: "herald.webpush", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = TransportMetrics(platform: "webpush", dimensions: configuration.metricsDimensions, factory: configuration.metricsFactory)
        self.eventLoopGroup = eventLoopGroup
        var http = HTTP1Client.Configuration()
        http.connectionsPerOrigin = max(1, configuration.maximumHTTP1ConnectionsPerOrigin)
        http.connectTimeout = configuration.connectTimeout
        http.requestTimeout = configuration.requestTimeout
        http.maximumBodyBytes = Self.maximumAnswerCount
        http.additionalTrustRoots = configuration.additionalTrustRoots
        http.connectGuard = Self.connectGuard(configuration.subscriptionPolicy)
        self.http = HTTP1Client(configuration: http, eventLoopGroup: eventLoopGroup)
        self.limiter = InFlightLimiter(limit: max(1, configuration.maximumInFlight))
    }

    /// Encrypts `message` for `subscription`, sends it, and returns when the push service has
    /// accepted it (201), with its `Location` (the message's resource at the service), after any
    /// retries. Throws ``WebPushSendError`` otherwise.
    @discardableResult
    public func send(_ message: WebPushMessage, to subscription: WebPushSubscription) async throws(WebPushSendError) -> WebPushReceipt {
        guard !isShutDown.load(ordering: .relaxed) else { throw WebPushSendError(.shutdown, reason: "the client was shut down") }
        do {
            _ = try await limiter.acquire()
        } catch {
            throw WebPushSendError(.shutdown, reason: "cancelled while waiting for room to send")
        }
        defer { limiter.release() }
        if let refusal = configuration.subscriptionPolicy.refusal(host: subscription.host) {
            throw WebPushSendError(.endpointNotAllowed, reason: refusal, attempts: 0)
        }
        let body: [UInt8]
        do {
            body = message.payload.isEmpty ? [] : try WebPushEncryption.encrypt(message.payload, for: subscription)
        } catch {
            throw WebPushSendError(.invalidRequest, reason: error.message)
        }
        return try await retrying(body: body, message: message, subscription: subscription, after: 0).get()
    }

    /// Sends `message` to each of `subscriptions` and returns each one's outcome, in order.
    ///
    /// The first attempts to a push service that speaks HTTP/2 go to its pool together, as many
    /// at once as the pool's in-flight bound lets (one wake of its connections per group, not one
    /// per message: measurably cheaper than a `send` each); what needs a retry is then retried as
    /// ``send(_:to:)`` retries. For the gateway's batches and the benchmark.
    ///
    /// With `payloads` (one per subscription, in their order), each subscription is sent its own
    /// payload in place of the message's, with the message's headers; a payload over
    /// ``WebPushEncryption/maximumPlaintextCount`` fails that subscription only.
    public func send(
        _ message: WebPushMessage, toEach subscriptions: [WebPushSubscription], payloads: [[UInt8]]? = nil
    ) async -> [Result<WebPushReceipt, WebPushSendError>] {
        var results = [Result<WebPushReceipt, WebPushSendError>?](repeating: nil, count: subscriptions.count)
        guard !isShutDown.load(ordering: .relaxed) else {
            return subscriptions.map { _ in .failure(WebPushSendError(.shutdown, reason: "the client was shut down")) }
        }
        var bodies = [[UInt8]](repeating: [], count: subscriptions.count)
        var pools: [String: (pool: HTTP2ExchangeClient, indices: [Int])] = [:]
        var singles: [Int] = []
        // The policy's verdict once per host, not per message: a group is mostly one push service.
        var verdicts: [String: String?] = [:]
        for (index, subscription) in subscriptions.enumerated() {
            let verdict = verdicts[subscription.host] ?? {
                let verdict = configuration.subscriptionPolicy.refusal(host: subscription.host)
                verdicts[subscription.host] = .some(verdict)
                return verdict
            }()
            if let refusal = verdict {
                results[index] = .failure(WebPushSendError(.endpointNotAllowed, reason: refusal, attempts: 0))
                continue
            }
            do throws(WebPushError) {
                let payload = payloads.map { $0.count == subscriptions.count ? $0[index] : message.payload } ?? message.payload
                bodies[index] = payload.isEmpty ? [] : try WebPushEncryption.encrypt(payload, for: subscription)
            } catch {
                results[index] = .failure(WebPushSendError(.invalidRequest, reason: error.message))
                continue
            }
            if let pool = transport(for: subscription) {
                pools[subscription.origin, default: (pool, [])].indices.append(index)
            } else {
                singles.append(index)
            }
        }
        let bodiesMade = bodies
        await withTaskGroup(of: [Outcome].self) { group in
            for (origin, (pool, indices)) in pools {
                group.addTask {
                    let sent = await self.sendTogether(message, to: indices.map { subscriptions[$0] }, bodies: indices.map { bodiesMade[$0] }, origin: origin, pool: pool)
                    return zip(indices, sent).map { Outcome(index: $0, result: $1) }
                }
            }
            for index in singles {
                group.addTask {
                    [Outcome(index: index, result: await self.retrying(body: bodiesMade[index], message: message, subscription: subscriptions[index], after: 0))]
                }
            }
            for await part in group {
                for outcome in part where results.indices.contains(outcome.index) { results[outcome.index] = outcome.result }
            }
        }
        return results.map { $0 ?? .failure(WebPushSendError(.shutdown, reason: "not sent")) }
    }

    /// One message's result in its place among those sent together.
    private struct Outcome: Sendable {
        var index: Int
        var result: Result<WebPushReceipt, WebPushSendError>
    }

    /// First attempts to one origin's pool at once, then the retries each needs.
    private func sendTogether(
        _ message: WebPushMessage, to subscriptions: [WebPushSubscription], bodies: [[UInt8]], origin: String, pool: HTTP2ExchangeClient
    ) async -> [Result<WebPushReceipt, WebPushSendError>] {
        let authorization: String
        do {
            authorization = try configuration.vapid.authorization(origin: origin)
        } catch {
            return subscriptions.map { _ in .failure(WebPushSendError(.invalidRequest, reason: error.message)) }
        }
        let requests = zip(subscriptions, bodies).map { subscription, body in
            HTTP2Request(method: "POST", path: subscription.requestTarget, headers: Self.headers(body: body, message: message, authorization: authorization), body: body)
        }
        let answers = await pool.exchange(requests, logger: logger)
        var results = [Result<WebPushReceipt, WebPushSendError>?](repeating: nil, count: subscriptions.count)
        var later: [(index: Int, delay: Duration, attempts: Int)] = []
        for (index, answer) in zip(results.indices, answers) {
            guard let attempt = attempt(from: answer, origin: origin, pool: pool) else {
                // Sent again over HTTP/1.1, as a first attempt.
                later.append((index, .zero, 0))
                continue
            }
            switch WebPushDecision.decide(attempt, attempts: 1, policy: configuration.retry, random: attempt.jitter) {
            case .accepted(let location): results[index] = .success(WebPushReceipt(location: location, attempts: 1))
            case .fail(let error): results[index] = .failure(error)
            case .retry(let delay): later.append((index, delay, 1))
            }
        }
        if !later.isEmpty {
            await withTaskGroup(of: Outcome.self) { group in
                for (index, delay, attempts) in later {
                    group.addTask {
                        Outcome(index: index, result: await self.retrying(body: bodies[index], message: message, subscription: subscriptions[index], after: attempts, delay: delay))
                    }
                }
                for await outcome in group where results.indices.contains(outcome.index) { results[outcome.index] = outcome.result }
            }
        }
        return results.map { $0 ?? .failure(WebPushSendError(.shutdown, reason: "not sent")) }
    }

    /// Attempts after the first `previous` (waiting `delay` first), each decided by
    /// ``WebPushDecision``. Its outcome as a value, not a typed throw: it runs in task groups'
    /// child tasks, where a release build's typed error from an async closure trapped (the
    /// gateway's first message to an HTTP/1.1-only push service).
    private func retrying(
        body: [UInt8], message: WebPushMessage, subscription: WebPushSubscription, after previous: Int, delay: Duration = .zero
    ) async -> Result<WebPushReceipt, WebPushSendError> {
        await HeraldTransport.retrying(
            after: previous, delay: delay, cancelled: { WebPushSendError(.shutdown, reason: "cancelled while waiting to retry", attempts: $0) }
        ) { attempts -> RetryStep<WebPushReceipt, WebPushSendError> in
            let authorization: String
            do throws(WebPushError) {
                authorization = try configuration.vapid.authorization(origin: subscription.origin)
            } catch {
                return .done(.failure(WebPushSendError(.invalidRequest, reason: error.message, attempts: attempts)))
            }
            let attempt = await self.attempt(body: body, message: message, subscription: subscription, authorization: authorization, attempts: attempts)
            if isShutDown.load(ordering: .relaxed), case .unreachable = attempt {
                return .done(.failure(WebPushSendError(.shutdown, reason: "the client was shut down", attempts: attempts)))
            }
            switch WebPushDecision.decide(attempt, attempts: attempts, policy: configuration.retry, random: attempt.jitter) {
            case .accepted(let location):
                return .done(.success(WebPushReceipt(location: location, attempts: attempts)))
            case .fail(let error):
                logger.debug("web push refused", metadata: ["origin": "\(subscription.origin)", "reason": "\(error)"])
                return .done(.failure(error))
            case .retry(let delay):
                logger.debug("web push retry", metadata: ["origin": "\(subscription.origin)", "attempt": "\(attempts)", "delay": "\(delay)"])
                return .retry(after: delay)
            }
        }
    }

    /// The request's headers (RFC 8030 §5, RFC 8291, RFC 8292).
    private static func headers(body: [UInt8], message: WebPushMessage, authorization: String) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("ttl", String(message.timeToLive))]
        if let urgency = message.urgency { headers.append(("urgency", urgency.rawValue)) }
        if let topic = message.topic { headers.append(("topic", topic)) }
        headers.append(("authorization", authorization))
        if !body.isEmpty {
            headers.append(("content-encoding", "aes128gcm"))
            headers.append(("content-type", "application/octet-stream"))
        }
        headers.append(("content-length", String(body.count)))
        return headers
    }

    /// One request and its answer, over the origin's HTTP/2 pool when it has one.
    private func attempt(
        body: [UInt8], message: WebPushMessage, subscription: WebPushSubscription, authorization: String, attempts: Int
    ) async -> WebPushDecision.Attempt {
        if let transport = transport(for: subscription) {
            let answer = await transport.exchange(
                HTTP2Request(
                    method: "POST", path: subscription.requestTarget, headers: Self.headers(body: body, message: message, authorization: authorization),
                    body: body),
                logger: logger)
            if let attempt = attempt(from: answer, origin: subscription.origin, pool: transport) { return attempt }
        }
        return await attemptHTTP1(body: body, message: message, subscription: subscription, authorization: authorization)
    }

    /// What an HTTP/2 pool's answer is as an attempt; `nil` when the push service refused HTTP/2
    /// by ALPN: its origin goes over HTTP/1.1 from then on, and its pool is shut down.
    private func attempt(
        from answer: Result<HTTPAnswer, TransportError>, origin: String, pool: HTTP2ExchangeClient
    ) -> WebPushDecision.Attempt? {
        switch answer {
        case .success(let answered):
            return .answered(status: answered.status, retryAfter: answered.retryAfter, location: answered.location, body: answered.body)
        case .failure(let error):
            switch error.code {
            case .timedOut: return .timedOut
            case .addressNotAllowed: return .notAllowed(error.message)
            case .untrusted: return .untrusted(error.message)
            case .http2NotOffered:
                let first = transports.withLock { transports -> Bool in
                    if case .some(.none) = transports[origin] { return false }
                    transports[origin] = .some(nil)
                    return true
                }
                if first {
                    logger.info("push service refused HTTP/2; using HTTP/1.1", metadata: ["origin": "\(origin)"])
                    Task { await pool.shutdown() }
                }
                return nil
            default: return .unreachable("\(origin): \(error.message)")
            }
        }
    }

    /// The origin's HTTP/2 pool: made on first use, for `https:` endpoints when HTTP/2 is allowed.
    private func transport(for subscription: WebPushSubscription) -> HTTP2ExchangeClient? {
        guard configuration.allowsHTTP2, subscription.isHTTPS else { return nil }
        return transports.withLock { transports -> HTTP2ExchangeClient? in
            if let known = transports[subscription.origin] { return known }
            guard transports.count < Self.maximumHTTP2Origins, !isShutDown.load(ordering: .relaxed) else { return nil }
            var tls = TLSConfiguration.makeClientConfiguration()
            let roots: TrustRoots = configuration.additionalTrustRoots.isEmpty ? .system : .systemAnd(configuration.additionalTrustRoots)
            roots.apply(to: &tls)
            var settings = HTTP2Client.Configuration(host: subscription.host, port: subscription.port, platform: "webpush", tls: tls)
            settings.name = "push service"
            settings.maximumConnections = 2
            settings.streamsPerConnection = max(1, (configuration.maximumInFlight + 1) / 2)
            settings.connectTimeout = .init(configuration.connectTimeout)
            settings.requestTimeout = .init(configuration.requestTimeout)
            settings.connectGuard = Self.connectGuard(configuration.subscriptionPolicy)
            settings.metrics = metrics
            // This client decides retries (``WebPushDecision``); the pool only re-sends what the
            // server refused unprocessed.
            let client = try? HTTP2ExchangeClient(
                configuration: settings, maximumInFlight: configuration.maximumInFlight, eventLoopGroup: eventLoopGroup, logger: logger
            )
            transports[subscription.origin] = .some(client)
            return client
        }
    }

    /// One request and its answer over HTTP/1.1.
    private func attemptHTTP1(body: [UInt8], message: WebPushMessage, subscription: WebPushSubscription, authorization: String) async -> WebPushDecision.Attempt {
        do {
            let answer = try await http.exchange(
                https: subscription.isHTTPS, host: subscription.host, port: subscription.port, method: .POST, target: subscription.requestTarget,
                headers: Self.headers(body: body, message: message, authorization: authorization), body: body)
            return .answered(status: answer.status, retryAfter: answer.retryAfter, location: answer.location, body: answer.body)
        } catch {
            switch error.code {
            case .timedOut: return .timedOut
            case .addressNotAllowed: return .notAllowed(error.message)
            case .shutdown: return .unreachable("the client was shut down")
            default: return .unreachable("\(subscription.origin): \(PeerText(error.message, limit: 200))")
            }
        }
    }

    /// Refuses a connection whose address the policy does not allow (a name may resolve into a
    /// private network after it was checked: DNS rebinding).
    private static func connectGuard(_ policy: WebPushSubscription.Policy) -> ConnectGuard {
        { host, address in
            guard let bytes = address.ipBytes, let ip = IPAddress(bytes: bytes) else { return nil }
            return policy.refusal(connectingTo: ip, for: host)
        }
    }

    /// Stops: later sends fail with ``WebPushSendError/Code/shutdown``, connections close.
    public func shutdown() async throws {
        guard !isShutDown.exchange(true, ordering: .relaxed) else { return }
        let pools = transports.withLock { transports in transports.values.compactMap { $0 } }
        for pool in pools { await pool.shutdown() }
        await http.shutdown()
    }
}

/// A message the push service accepted.
public struct WebPushReceipt: Sendable, Hashable {
    /// `Location`: the push message's resource at the push service (RFC 8030 §5).
    public var location: String?
    /// How many times it was sent.
    public var attempts: Int

    public init(location: String?, attempts: Int) {
        self.location = location
        self.attempts = attempts
    }
}

/// Runs `body` with a client, and shuts it down however `body` ends.
public func withWebPushClient<Result: Sendable>(
    configuration: WebPushClient.Configuration, logger: Logger = Logger(label: "herald.webpush", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (WebPushClient) async throws -> Result
) async throws -> Result {
    let client = WebPushClient(configuration: configuration, logger: logger)
    return try await withShutdown(of: client, shutdown: { try await $0.shutdown() }, body)
}
