import HeraldTransport
import AsyncHTTPClient
import HeraldCore
@_spi(HeraldFlow) import HeraldFlow
import HeraldIdentity
import Logging
import Metrics
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Sends Firebase Cloud Messaging HTTP v1 messages (`POST /v1/projects/{project}/messages:send`)
/// for one service account: many requests multiplexed over a few HTTP/2 connections on Herald's
/// own HTTP/2 pool (the APNs client's), with one OAuth access token shared by every request
/// (``FCMAccessTokenProvider``).
///
/// `send` waits while ``Configuration/maximumInFlight`` messages are outstanding (back-pressure),
/// retries 429 (`QUOTA_EXCEEDED`), 5xx (`UNAVAILABLE`, `INTERNAL`), timeouts and unreachable
/// servers with back-off and `Retry-After`, answers a 401 for the access token with one fresh
/// token and one retry, and throws ``FCMSendError`` for anything else:
/// ``FCMSendError/isTokenGone`` for `UNREGISTERED`, ``FCMSendError/isTokenInvalid`` for a token
/// FCM calls malformed or another sender's.
///
/// Call ``shutdown()`` when done, or use ``withFCMClient(configuration:logger:_:)``.
public final class FCMClient: Sendable {
    /// How the client connects, bounds and retries.
    public struct Configuration: Sendable {
        /// Whose messages: its key signs the access-token assertion.
        public var serviceAccount: FCMServiceAccount
        /// The project messages are sent for; default the service account's `project_id`.
        public var projectID: String
        /// FCM's origin, `https://fcm.googleapis.com`; a mock's `https://127.0.0.1:PORT` in tests.
        public var endpoint: String = FCMClient.googleEndpoint
        /// Certificates to trust besides the system's, for the endpoint and the token URI alike:
        /// a mock's CA, in tests.
        public var additionalTrustRoots: [NIOSSLCertificate] = []
        /// HTTP/2 connections to FCM, opened as the ones open are busy. Default 2.
        public var maximumConnections = 2
        /// Messages outstanding at once; `send` waits past it. Default 1000.
        public var maximumInFlight = 1000
        /// The deadline of each attempt, from sending to the answer's end.
        public var requestTimeout: Duration = .seconds(30)
        /// The deadline for a connection (TCP and TLS).
        public var connectTimeout: Duration = .seconds(10)
        /// Retries of 429, 5xx, timeouts and unreachable servers.
        public var retry: FCMRetryPolicy = .default
        /// Dimensions added to the HTTP/2 transport's metrics (`herald_fcm_sent_total`,
        /// `_retried_total`, `_connections_opened_total`, `_connections_closed_total`,
        /// `herald_fcm_latency`), e.g. `[("app", "shop")]`.
        public var metricsDimensions: [(String, String)] = []
        /// Where those metrics go; `nil` (default): the global `MetricsSystem.factory`.
        public var metricsFactory: (any MetricsFactory)?

        /// Sending for `serviceAccount`'s project to Google's FCM.
        public init(serviceAccount: FCMServiceAccount) {
            self.serviceAccount = serviceAccount
            self.projectID = serviceAccount.projectID
        }
    }

    /// Google's FCM endpoint.
    public static let googleEndpoint = "https://fcm.googleapis.com"

    public let configuration: Configuration
    /// The access token every request carries.
    public let tokens: FCMAccessTokenProvider
    private let http: HTTPClient
    private let pool: HTTP2ExchangeClient
    private let path: String
    private let logger: Logger
    private let isShutDown = Atomic<Bool>(false)
    /// The request head for the access token in use: made once per token, shared by every
    /// request that carries it (the pool indexes its path and content type, and copies its
    /// encoded authorization).
    private let currentHead = Mutex<(token: String, head: SharedRequestHead)?>(nil)

    /// A client. Throws when the endpoint or the token URI is not `https:` (or `http:` to a
    /// loopback address), or the project id is not one.
    public init(
        configuration: Configuration, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "herald.fcm", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(FCMError) {
        guard let endpoint = ServiceEndpoint(configuration.endpoint), endpoint.isHTTPS else {
            throw FCMError(.invalidConfiguration, "the FCM endpoint must be an https URL; got \(PeerText(configuration.endpoint, limit: 100))", field: "endpoint")
        }
        guard !configuration.projectID.isEmpty, configuration.projectID.utf8.count <= 256,
            configuration.projectID.utf8.allSatisfy({ Base64URL.isAlphabet($0) })
        else {
            throw FCMError(.invalidConfiguration, "the FCM project id must be letters, digits and hyphens", field: "projectID")
        }
        self.configuration = configuration
        self.logger = logger
        self.path = (endpoint.path == "/" ? "" : String(endpoint.path.reversed().drop(while: { $0 == "/" }).reversed()))
            + "/v1/projects/\(configuration.projectID)/messages:send"

        var tls = TLSConfiguration.makeClientConfiguration()
        if !configuration.additionalTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(configuration.additionalTrustRoots)] }
        var http = HTTPClient.Configuration(tlsConfiguration: tls)
        http.httpVersion = .http1Only
        http.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 2)
        http.redirectConfiguration = .disallow
        http.decompression = .disabled
        self.http = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: http, backgroundActivityLogger: logger)
        do {
            self.tokens = try FCMAccessTokenProvider(
                serviceAccount: configuration.serviceAccount, http: self.http, requestTimeout: configuration.requestTimeout, logger: logger)
        } catch {
            try? self.http.syncShutdown()
            throw error
        }

        var poolTLS = TLSConfiguration.makeClientConfiguration()
        let roots: TrustRoots = configuration.additionalTrustRoots.isEmpty ? .system : .systemAnd(configuration.additionalTrustRoots)
        roots.apply(to: &poolTLS)
        var settings = HTTP2Client.Configuration(host: endpoint.host, port: endpoint.port, platform: "fcm", tls: poolTLS)
        settings.name = "FCM"
        settings.metrics = TransportMetrics(platform: "fcm", dimensions: configuration.metricsDimensions, factory: configuration.metricsFactory)
        let connections = max(1, configuration.maximumConnections)
        settings.maximumConnections = connections
        settings.streamsPerConnection = max(1, (max(1, configuration.maximumInFlight) + connections - 1) / connections)
        settings.connectTimeout = TimeAmount(configuration.connectTimeout)
        settings.requestTimeout = TimeAmount(configuration.requestTimeout)
        // This client decides retries (``FCMDecision``); the pool only re-sends what the server
        // refused unprocessed.
        do {
            self.pool = try HTTP2ExchangeClient(
                configuration: settings, maximumInFlight: configuration.maximumInFlight, eventLoopGroup: eventLoopGroup, logger: logger)
        } catch {
            try? self.http.syncShutdown()
            throw FCMError(.invalidConfiguration, "the FCM connection pool cannot be made: \(error)", field: "endpoint")
        }
    }

    /// Sends `message` and returns once FCM accepted it (200), with its message name, after any
    /// retries. Throws ``FCMSendError`` otherwise; a message FCM would refuse is refused here
    /// before it is sent (``FCMSendError/Code/invalidMessage``).
    @discardableResult
    public func send(_ message: FCMMessage) async throws(FCMSendError) -> FCMReceipt {
        guard !isShutDown.load(ordering: .relaxed) else { throw FCMSendError(.shutdown, reason: "the client was shut down") }
        let body: [UInt8]
        do {
            body = try message.requestBody()
        } catch {
            throw FCMSendError(.invalidMessage, reason: error.message, attempts: 0)
        }
        return try await retrying(body: body, after: 0, refreshed: false).get()
    }

    /// Sends `message` to each of `tokens` (its own token is replaced) and returns each one's
    /// outcome, in order.
    ///
    /// The first attempts go to the pool together, as many at once as its in-flight bound lets
    /// (one wake of its connections per group, not one per message); what needs a retry is then
    /// retried as ``send(_:)`` retries. For the gateway's batches and the benchmark.
    ///
    /// With `varying`, each token's message has a data entry of its own: `varying.key` with
    /// the value at the token's index in `varying.values` (a value per token, which must need no
    /// JSON escaping: 1 to 64 letters, digits, `-` and `_`; any other is left out of the message).
    public func send(_ message: FCMMessage, toEach tokens: [String], varying: FCMDataEntry? = nil) async -> [Result<FCMReceipt, FCMSendError>] {
        guard !isShutDown.load(ordering: .relaxed) else {
            return tokens.map { _ in .failure(FCMSendError(.shutdown, reason: "the client was shut down")) }
        }
        var results = [Result<FCMReceipt, FCMSendError>?](repeating: nil, count: tokens.count)
        var bodies: [(index: Int, body: [UInt8])] = []
        bodies.reserveCapacity(tokens.count)
        // The message is the same for every token: checked and written once, each body that
        // one with the token put in (a token's alphabet needs no JSON escaping).
        // A message too large for the varying entry (or raw) is sent without it.
        var varies = varying.map { $0.values.count == tokens.count } ?? false
        var template = varies ? FCMBodyTemplate(message, varying: varying?.key) : nil
        if template == nil {
            varies = false
            template = FCMBodyTemplate(message)
        }
        var each = message
        for (index, token) in tokens.enumerated() {
            let value = varies ? varying.map { $0.values[index] } : nil
            if let template, FCMRegistrationToken.isValid(token), value.map(FCMDataEntry.needsNoEscaping) ?? true {
                bodies.append((index, template.body(for: token, value: value ?? "")))
                continue
            }
            each.token = token
            if let varying, let value, FCMDataEntry.needsNoEscaping(value) { each.setData(.string(value), forKey: varying.key) }
            do throws(FCMError) {
                bodies.append((index, try each.requestBody()))
            } catch {
                results[index] = .failure(FCMSendError(.invalidMessage, reason: error.message, attempts: 0))
            }
        }
        var later: [(index: Int, delay: Duration, attempts: Int, refreshed: Bool)] = []
        do throws(FCMSendError) {
            let token = try await self.tokens.accessToken()
            let head = head(for: token)
            let answers = await pool.exchange(bodies.map { HTTP2Request(head, body: $0.body) }, logger: logger)
            var refused = false
            for ((index, _), answer) in zip(bodies, answers) {
                let outcome = attempt(from: answer)
                switch FCMDecision.decide(outcome, attempts: 1, refreshed: false, policy: configuration.retry, random: outcome.jitter) {
                case .accepted(let name): results[index] = .success(FCMReceipt(name: name, attempts: 1))
                case .fail(let error): results[index] = .failure(error)
                case .retry(let delay): later.append((index, delay, 1, false))
                case .refreshTokenAndRetry:
                    refused = true
                    later.append((index, .zero, 1, true))
                }
            }
            if refused { self.tokens.invalidate(token) }
        } catch {
            // No access token: each message goes through the retry discipline on its own.
            later = bodies.map { ($0.index, .zero, 0, false) }
        }
        if !later.isEmpty {
            let bodyOf = Dictionary(uniqueKeysWithValues: bodies.map { ($0.index, $0.body) })
            await withTaskGroup(of: Outcome.self) { group in
                for (index, delay, attempts, refreshed) in later {
                    group.addTask {
                        Outcome(index: index, result: await self.retrying(body: bodyOf[index] ?? [], after: attempts, refreshed: refreshed, delay: delay))
                    }
                }
                for await outcome in group where results.indices.contains(outcome.index) { results[outcome.index] = outcome.result }
            }
        }
        return results.map { $0 ?? .failure(FCMSendError(.shutdown, reason: "not sent")) }
    }

    /// One message's result in its place among those sent together.
    private struct Outcome: Sendable {
        var index: Int
        var result: Result<FCMReceipt, FCMSendError>
    }

    /// Attempts after the first `previous` (waiting `delay` first), each decided by ``FCMDecision``.
    /// Its outcome as a value, not a typed throw: it runs in task groups' child tasks, where a
    /// release build's typed error from an async closure trapped the Web Push client's twin.
    private func retrying(body: [UInt8], after previous: Int, refreshed alreadyRefreshed: Bool, delay: Duration = .zero) async -> Result<FCMReceipt, FCMSendError> {
        var refreshed = alreadyRefreshed
        return await HeraldTransport.retrying(
            after: previous, delay: delay, cancelled: { FCMSendError(.shutdown, reason: "cancelled while waiting to retry", attempts: $0) }
        ) { attempts -> RetryStep<FCMReceipt, FCMSendError> in
            let outcome: FCMDecision.Attempt
            var token: String?
            do throws(FCMSendError) {
                let access = try await tokens.accessToken()
                token = access
                outcome = await attempt(body: body, token: access)
            } catch where error.code == .tokenRefused || error.code == .shutdown || error.code == .untrusted {
                return .done(.failure(FCMSendError(error.code, status: error.status, reason: error.reason, attempts: attempts)))
            } catch {
                outcome = .unreachable(error.reason)
            }
            if isShutDown.load(ordering: .relaxed), case .unreachable = outcome {
                return .done(.failure(FCMSendError(.shutdown, reason: "the client was shut down", attempts: attempts)))
            }
            switch FCMDecision.decide(outcome, attempts: attempts, refreshed: refreshed, policy: configuration.retry, random: outcome.jitter) {
            case .accepted(let name):
                return .done(.success(FCMReceipt(name: name, attempts: attempts)))
            case .fail(let error):
                logger.debug("fcm refused", metadata: ["reason": "\(error)"])
                return .done(.failure(error))
            case .retry(let delay):
                logger.debug("fcm retry", metadata: ["attempt": "\(attempts)", "delay": "\(delay)"])
                return .retry(after: delay)
            case .refreshTokenAndRetry:
                logger.debug("fcm refused the access token; fetching a fresh one")
                if let token { tokens.invalidate(token) }
                refreshed = true
                return .retry(after: .zero)
            }
        }
    }

    /// The head of every request carrying access token `token`: the one made for it, or a new
    /// one when the token changed.
    private func head(for token: String) -> SharedRequestHead {
        if let current = currentHead.withLock({ $0 }), current.token == token { return current.head }
        let made = SharedRequestHead(method: "POST", path: path, contentType: "application/json; charset=UTF-8", authorization: "Bearer " + token)
        currentHead.withLock { $0 = (token, made) }
        return made
    }

    /// One request and its answer.
    private func attempt(body: [UInt8], token: String) async -> FCMDecision.Attempt {
        attempt(from: await pool.exchange(HTTP2Request(head(for: token), body: body), logger: logger))
    }

    private func attempt(from answer: Result<HTTPAnswer, TransportError>) -> FCMDecision.Attempt {
        switch answer {
        case .success(let answered):
            // A 200's body is a short name; only a body over the bound is copied to cut it.
            let body = answered.body.count <= FCMDecision.maximumBodyCount ? answered.body : Array(answered.body.prefix(FCMDecision.maximumBodyCount))
            return .answered(status: answered.status, retryAfter: answered.retryAfter, body: body)
        case .failure(let error) where error.code == .timedOut:
            return .timedOut
        case .failure(let error) where error.code == .untrusted:
            return .untrusted("FCM: \(error.message)")
        case .failure(let error):
            return .unreachable("FCM: \(error.message)")
        }
    }

    /// Stops: later sends fail with ``FCMSendError/Code/shutdown``, connections close.
    public func shutdown() async throws {
        guard !isShutDown.exchange(true, ordering: .relaxed) else { return }
        await pool.shutdown()
        try await http.shutdown()
    }
}

/// A message FCM accepted.
public struct FCMReceipt: Sendable, Hashable {
    /// FCM's name for it: `projects/{project}/messages/{id}`.
    public var name: String?
    /// How many times it was sent.
    public var attempts: Int

    public init(name: String?, attempts: Int) {
        self.name = name
        self.attempts = attempts
    }
}

/// Runs `body` with a client, and shuts it down however `body` ends.
public func withFCMClient<Result: Sendable>(
    configuration: FCMClient.Configuration, logger: Logger = Logger(label: "herald.fcm", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (FCMClient) async throws -> Result
) async throws -> Result {
    let client = try FCMClient(configuration: configuration, logger: logger)
    return try await withShutdown(of: client, shutdown: { try await $0.shutdown() }, body)
}

/// A data entry whose value differs for each token a message is sent to
/// (``FCMClient/send(_:toEach:varying:)``).
public struct FCMDataEntry: Sendable, Hashable {
    public var key: String
    /// One value per token, in the tokens' order.
    public var values: [String]

    public init(key: String, values: [String]) {
        self.key = key
        self.values = values
    }

    /// Letters, digits, `-` and `_` only, 1 to 64 of them.
    static func needsNoEscaping(_ value: String) -> Bool {
        (1...64).contains(value.utf8.count) && value.utf8.allSatisfy { Base64URL.isAlphabet($0) }
    }
}
