import AsyncHTTPClient
import HeraldCore
@_spi(HeraldFlow) import HeraldFlow
import HeraldIdentity
import HeraldTransport
import Logging
import Metrics
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Sends Huawei Push Kit messages: Android's (v1, `POST /v1/{clientid}/messages:send`, with the
/// app's OAuth access token) and HarmonyOS NEXT's (v3, `POST /v3/{projectId}/messages:send`, with
/// a service-account JWT and the `push-type` header), many requests multiplexed over a few HTTP/2
/// connections on Herald's own HTTP/2 pool.
///
/// `send` waits while ``Configuration/maximumInFlight`` messages are outstanding, retries 429 and
/// 503 (Push Kit's traffic control), other 5xx, 81000001, timeouts and unreachable servers with
/// back-off and `Retry-After`, answers a refused bearer with one fresh bearer and one retry, and
/// throws ``HMSSendError`` for anything else. A partial success (80100000) returns a receipt
/// naming the tokens that failed; ``HMSFailedToken/isTokenInvalid`` says which to retire.
///
/// Call ``shutdown()`` when done, or use ``withHMSClient(configuration:logger:_:)``.
public final class HMSClient: Sendable {
    /// How the client authenticates, connects, bounds and retries.
    public struct Configuration: Sendable {
        /// The app's OAuth client credentials: what the Android API (v1) needs.
        public var app: HMSAppCredentials?
        /// The service account: what HarmonyOS NEXT's API (v3) needs.
        public var serviceAccount: HMSServiceAccount?
        /// Push Kit's origin, `https://push-api.cloud.huawei.com`; a mock's in tests.
        public var endpoint: String = HMSClient.huaweiEndpoint
        /// Certificates to trust besides the system's, for the endpoint and the token URI: a mock's CA.
        public var additionalTrustRoots: [NIOSSLCertificate] = []
        /// HTTP/2 connections to Push Kit. Default 2.
        public var maximumConnections = 2
        /// Requests outstanding at once; `send` waits past it. Default 1000.
        public var maximumInFlight = 1000
        /// The deadline of each attempt, from sending to the answer's end.
        public var requestTimeout: Duration = .seconds(30)
        /// The deadline for a connection (TCP and TLS).
        public var connectTimeout: Duration = .seconds(10)
        /// Retries of 429, 5xx, 81000001, timeouts and unreachable servers.
        public var retry: HMSRetryPolicy = .default
        /// Dimensions added to the transport's metrics (`herald_hms_…`).
        public var metricsDimensions: [(String, String)] = []
        /// Where those metrics go; `nil`: the global `MetricsSystem.factory`.
        public var metricsFactory: (any MetricsFactory)?

        /// Sending with either or both credentials (at least one).
        public init(app: HMSAppCredentials? = nil, serviceAccount: HMSServiceAccount? = nil) {
            self.app = app
            self.serviceAccount = serviceAccount
        }
    }

    /// Huawei's Push Kit origin.
    public static let huaweiEndpoint = "https://push-api.cloud.huawei.com"

    public let configuration: Configuration
    /// The v1 access token, when the client has app credentials.
    public let tokens: HMSAccessTokenProvider?
    private let jwt: HMSJWTSource?
    private let http: HTTPClient
    private let pool: HTTP2ExchangeClient
    private let androidPath: String?
    private let harmonyPath: String?
    private let logger: Logger
    private let isShutDown = Atomic<Bool>(false)
    /// The v1 request head for the current access token, shared by every request made with it.
    private let currentHead = Mutex<(token: String, head: SharedRequestHead)?>(nil)

    /// A client. Throws when it has no credentials, or the endpoint or a token URI is not `https:`.
    public init(
        configuration: Configuration, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "herald.hms", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(HMSError) {
        guard configuration.app != nil || configuration.serviceAccount != nil else {
            throw HMSError(.invalidConfiguration, "a Push Kit client needs app credentials (v1), a service account (v3), or both", field: "app")
        }
        guard let endpoint = ServiceEndpoint(configuration.endpoint), endpoint.isHTTPS else {
            throw HMSError(.invalidConfiguration, "the Push Kit endpoint must be an https URL; got \(PeerText(configuration.endpoint, limit: 100))", field: "endpoint")
        }
        self.configuration = configuration
        self.logger = logger
        androidPath = configuration.app.map { endpoint.base + "/v1/\($0.clientID)/messages:send" }
        harmonyPath = configuration.serviceAccount.map { endpoint.base + "/v3/\(HMSClient.pathSegment($0.projectID))/messages:send" }
        jwt = configuration.serviceAccount.map(HMSJWTSource.init(account:))

        var tls = TLSConfiguration.makeClientConfiguration()
        if !configuration.additionalTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(configuration.additionalTrustRoots)] }
        var http = HTTPClient.Configuration(tlsConfiguration: tls)
        http.httpVersion = .http1Only
        http.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 2)
        http.redirectConfiguration = .disallow
        http.decompression = .disabled
        let client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: http, backgroundActivityLogger: logger)
        self.http = client
        do {
            tokens = try configuration.app.map { app throws(HMSError) in
                try HMSAccessTokenProvider(credentials: app, http: client, requestTimeout: configuration.requestTimeout, logger: logger)
            }
        } catch {
            try? client.syncShutdown()
            throw error
        }

        var poolTLS = TLSConfiguration.makeClientConfiguration()
        let roots: TrustRoots = configuration.additionalTrustRoots.isEmpty ? .system : .systemAnd(configuration.additionalTrustRoots)
        roots.apply(to: &poolTLS)
        var settings = HTTP2Client.Configuration(host: endpoint.host, port: endpoint.port, platform: "hms", tls: poolTLS)
        settings.name = "Push Kit"
        settings.metrics = TransportMetrics(platform: "hms", dimensions: configuration.metricsDimensions, factory: configuration.metricsFactory)
        let connections = max(1, configuration.maximumConnections)
        settings.maximumConnections = connections
        settings.streamsPerConnection = max(1, (max(1, configuration.maximumInFlight) + connections - 1) / connections)
        settings.connectTimeout = TimeAmount(configuration.connectTimeout)
        settings.requestTimeout = TimeAmount(configuration.requestTimeout)
        do {
            pool = try HTTP2ExchangeClient(configuration: settings, maximumInFlight: configuration.maximumInFlight, eventLoopGroup: eventLoopGroup, logger: logger)
        } catch {
            try? client.syncShutdown()
            throw HMSError(.invalidConfiguration, "the Push Kit connection pool cannot be made: \(error)", field: "endpoint")
        }
    }

    /// JWTs the service account signed so far (v3).
    public var signedJWTCount: Int { jwt?.signedCount ?? 0 }

    /// Sends an Android (v1) message and returns once Push Kit accepted it for some or all of its
    /// tokens, after any retries. Throws ``HMSSendError`` otherwise; a message Push Kit would
    /// refuse is refused here before it is sent (``HMSSendError/Code/invalidRequest``).
    @discardableResult
    public func send(_ message: HMSAndroidMessage) async throws(HMSSendError) -> HMSReceipt {
        guard let androidPath, let tokens else {
            throw HMSSendError(.notConfigured, reason: "the Android API (v1) needs app credentials (client ID and secret)", attempts: 0)
        }
        let body: [UInt8]
        do {
            body = try message.requestBody()
        } catch {
            throw HMSSendError(.invalidRequest, reason: error.message, attempts: 0)
        }
        let bearer = Bearer(
            get: { () async throws(HMSSendError) -> String in try await tokens.accessToken() }, invalidate: { tokens.invalidate($0) })
        return try await send(body: body, path: androidPath, pushType: nil, tokens: message.tokens, bearer: bearer).get()
    }

    /// Sends a HarmonyOS NEXT (v3) message; as ``send(_:)-(HMSAndroidMessage)``.
    @discardableResult
    public func send(_ message: HMSHarmonyMessage) async throws(HMSSendError) -> HMSReceipt {
        guard let harmonyPath, let jwt else {
            throw HMSSendError(.notConfigured, reason: "the HarmonyOS API (v3) needs a service account", attempts: 0)
        }
        let body: [UInt8]
        do {
            body = try message.requestBody()
        } catch {
            throw HMSSendError(.invalidRequest, reason: error.message, attempts: 0)
        }
        let bearer = Bearer(get: { () async throws(HMSSendError) -> String in try jwt.token() }, invalidate: { jwt.invalidate($0) })
        return try await send(body: body, path: harmonyPath, pushType: message.pushType.rawValue, tokens: message.tokens, bearer: bearer).get()
    }

    /// Sends Android (v1) message `message` to each of `tokens` alone, one request a token (its
    /// own `tokens` are ignored), and returns each result in order. The first attempts go to the
    /// pool together, as many at once as its in-flight bound lets (one wake of its connections per
    /// group, not one per message); what needs a retry is then retried as ``send(_:)-(HMSAndroidMessage)``
    /// retries. For per-device sends (the gateway's) and the benchmark; a message to many devices
    /// at once is cheaper as one request naming up to 1,000 tokens.
    public func send(_ message: HMSAndroidMessage, toEach tokens: [String]) async -> [Result<HMSReceipt, HMSSendError>] {
        guard !isShutDown.load(ordering: .relaxed) else {
            return tokens.map { _ in .failure(HMSSendError(.shutdown, reason: "the client was shut down", attempts: 0)) }
        }
        guard let androidPath, let accessTokens = self.tokens else {
            return tokens.map { _ in
                .failure(HMSSendError(.notConfigured, reason: "the Android API (v1) needs app credentials (client ID and secret)", attempts: 0))
            }
        }
        var results = [Result<HMSReceipt, HMSSendError>?](repeating: nil, count: tokens.count)
        var bodies: [(index: Int, body: [UInt8])] = []
        bodies.reserveCapacity(tokens.count)
        // The message is the same for every token: checked and written once, each body that one
        // with the token put in.
        let template = HMSBodyTemplate(message)
        var each = message
        for (index, token) in tokens.enumerated() {
            if let template, HMSPushToken.isValid(token) {
                bodies.append((index, template.body(for: token)))
                continue
            }
            each.tokens = [token]
            do throws(HMSError) {
                bodies.append((index, try each.requestBody()))
            } catch {
                results[index] = .failure(HMSSendError(.invalidRequest, reason: error.message, attempts: 0))
            }
        }
        var later: [(index: Int, delay: Duration, attempts: Int, refreshed: Bool)] = []
        do throws(HMSSendError) {
            let bearer = try await accessTokens.accessToken()
            let head = head(for: bearer)
            let answers = await pool.exchange(bodies.map { HTTP2Request(head, body: $0.body) }, logger: logger)
            var refused = false
            for ((index, _), answer) in zip(bodies, answers) {
                let outcome = attempt(from: answer)
                switch HMSDecision.decide(outcome, tokens: [tokens[index]], attempts: 1, refreshed: false, policy: configuration.retry, random: outcome.jitter) {
                case .accepted(let requestID, let failed, let count):
                    results[index] = .success(HMSReceipt(requestID: requestID, attempts: 1, failedTokens: failed, failureCount: count))
                case .fail(let error): results[index] = .failure(error)
                case .retry(let delay): later.append((index, delay, 1, false))
                case .refreshTokenAndRetry:
                    refused = true
                    later.append((index, .zero, 1, true))
                }
            }
            if refused { accessTokens.invalidate(bearer) }
        } catch where error.code == .tokenRefused || error.code == .untrusted {
            for (index, _) in bodies { results[index] = .failure(HMSSendError(error.code, status: error.status, reason: error.reason, attempts: 1)) }
        } catch {
            // No access token yet: each message goes through the retry discipline on its own.
            later = bodies.map { ($0.index, .zero, 0, false) }
        }
        if !later.isEmpty {
            let bodyOf = Dictionary(uniqueKeysWithValues: bodies.map { ($0.index, $0.body) })
            let bearer = Bearer(
                get: { () async throws(HMSSendError) -> String in try await accessTokens.accessToken() }, invalidate: { accessTokens.invalidate($0) })
            await withTaskGroup(of: (index: Int, result: Result<HMSReceipt, HMSSendError>).self) { group in
                for (index, delay, attempts, refreshed) in later {
                    let token = tokens[index]
                    group.addTask {
                        let result = await self.send(
                            body: bodyOf[index] ?? [], path: androidPath, pushType: nil, tokens: [token], bearer: bearer, after: attempts, refreshed: refreshed,
                            delay: delay)
                        return (index, result)
                    }
                }
                for await outcome in group where results.indices.contains(outcome.index) { results[outcome.index] = outcome.result }
            }
        }
        return results.map { $0 ?? .failure(HMSSendError(.shutdown, reason: "not sent", attempts: 0)) }
    }

    /// Where an attempt gets its bearer, and how a refused one is dropped.
    private struct Bearer: Sendable {
        var get: @Sendable () async throws(HMSSendError) -> String
        var invalidate: @Sendable (String) -> Void
    }

    /// Attempts, each decided by ``HMSDecision``; the outcome as a value (it may run in a task
    /// group's child task, as the FCM client's does).
    private func send(
        body: [UInt8], path: String, pushType: Int?, tokens: [String], bearer: Bearer, after previous: Int = 0, refreshed alreadyRefreshed: Bool = false,
        delay: Duration = .zero
    ) async -> Result<HMSReceipt, HMSSendError> {
        guard !isShutDown.load(ordering: .relaxed) else { return .failure(HMSSendError(.shutdown, reason: "the client was shut down", attempts: previous)) }
        var refreshed = alreadyRefreshed
        return await HeraldTransport.retrying(
            after: previous, delay: delay, cancelled: { HMSSendError(.shutdown, reason: "cancelled while waiting to retry", attempts: $0) }
        ) { attempts -> RetryStep<HMSReceipt, HMSSendError> in
            let outcome: HMSDecision.Attempt
            var used: String?
            do throws(HMSSendError) {
                let token = try await bearer.get()
                used = token
                outcome = await attempt(body: body, path: path, pushType: pushType, bearer: token)
            } catch where error.code == .tokenRefused || error.code == .shutdown || error.code == .untrusted {
                return .done(.failure(HMSSendError(error.code, status: error.status, reason: error.reason, attempts: attempts)))
            } catch {
                outcome = .unreachable(error.reason)
            }
            if isShutDown.load(ordering: .relaxed), case .unreachable = outcome {
                return .done(.failure(HMSSendError(.shutdown, reason: "the client was shut down", attempts: attempts)))
            }
            switch HMSDecision.decide(outcome, tokens: tokens, attempts: attempts, refreshed: refreshed, policy: configuration.retry, random: outcome.jitter) {
            case .accepted(let requestID, let failed, let count):
                return .done(.success(HMSReceipt(requestID: requestID, attempts: attempts, failedTokens: failed, failureCount: count)))
            case .fail(let error):
                logger.debug("push kit refused", metadata: ["reason": "\(error)"])
                return .done(.failure(error))
            case .retry(let delay):
                logger.debug("push kit retry", metadata: ["attempt": "\(attempts)", "delay": "\(delay)"])
                return .retry(after: delay)
            case .refreshTokenAndRetry:
                logger.debug("push kit refused the bearer; making a fresh one")
                if let used { bearer.invalidate(used) }
                refreshed = true
                return .retry(after: .zero)
            }
        }
    }

    /// One request and its answer. The bearer is a credential: never logged.
    private func attempt(body: [UInt8], path: String, pushType: Int?, bearer: String) async -> HMSDecision.Attempt {
        var headers: [(name: String, value: String)] {
            var headers: [(name: String, value: String)] = [(Self.contentType.name, Self.contentType.value), ("authorization", "Bearer " + bearer)]
            if let pushType { headers.append(("push-type", String(pushType))) }
            return headers
        }
        let request = pushType == nil && path == androidPath ? HTTP2Request(head(for: bearer), body: body) : HTTP2Request(method: "POST", path: path, headers: headers, body: body)
        return attempt(from: await pool.exchange(request, logger: logger))
    }

    /// The decision's view of one answer.
    private func attempt(from answer: Result<HTTPAnswer, TransportError>) -> HMSDecision.Attempt {
        switch answer {
        case .success(let answered):
            let body = answered.body.count <= HMSDecision.maximumBodyCount ? answered.body : Array(answered.body.prefix(HMSDecision.maximumBodyCount))
            return .answered(status: answered.status, retryAfter: answered.retryAfter, body: body)
        case .failure(let error) where error.code == .timedOut:
            return .timedOut
        case .failure(let error) where error.code == .untrusted:
            return .untrusted("Push Kit: \(error.message)")
        case .failure(let error):
            return .unreachable("Push Kit: \(error.message)")
        }
    }

    /// Every request's `content-type`.
    private static let contentType = (name: "content-type", value: "application/json;charset=UTF-8")

    /// The v1 head carrying access token `token`: the one made for it, or a new one when the
    /// token changed (the `authorization` field is encoded once per token, not per request).
    private func head(for token: String) -> SharedRequestHead {
        if let current = currentHead.withLock({ $0 }), current.token == token { return current.head }
        let made = SharedRequestHead(method: "POST", path: androidPath ?? "", contentType: Self.contentType.value, authorization: "Bearer " + token)
        currentHead.withLock { $0 = (token, made) }
        return made
    }

    /// Stops: later sends fail with ``HMSSendError/Code/shutdown``, connections close.
    public func shutdown() async throws {
        guard !isShutDown.exchange(true, ordering: .relaxed) else { return }
        await pool.shutdown()
        try await http.shutdown()
    }

    /// A path segment: characters a URL path takes as they are, the rest %-encoded.
    static func pathSegment(_ text: String) -> String {
        HMSAccessTokenProvider.formEncoded(text)
    }
}

/// Runs `body` with a client, and shuts it down however `body` ends.
public func withHMSClient<Result: Sendable>(
    configuration: HMSClient.Configuration, logger: Logger = Logger(label: "herald.hms", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (HMSClient) async throws -> Result
) async throws -> Result {
    let client = try HMSClient(configuration: configuration, logger: logger)
    return try await withShutdown(of: client, shutdown: { try await $0.shutdown() }, body)
}
