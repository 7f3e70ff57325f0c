import HeraldCore
import HeraldFCM
import HeraldMock
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import _CryptoExtras

/// A mock Firebase Cloud Messaging service with its OAuth token endpoint, over TLS with HTTP/2
/// and HTTP/1.1 offered by ALPN (as Google serves both).
///
/// It makes a service account of its own (a fresh RSA key) whose `token_uri` is its
/// `POST /token`; ``serviceAccountJSON`` is the key file a client loads. The token endpoint
/// verifies each assertion (RS256 with the account's public key, `kid`, `iss`, `aud` the file's
/// token URI or Google's `https://oauth2.googleapis.com/token`, a `firebase.messaging` or
/// `cloud-platform` scope, `iat` and an `exp` at most an hour later) and hands out access tokens
/// living ``Configuration/accessTokenLifetime``.
///
/// `POST /v1/projects/{project}/messages:send` is checked in this order, and the first failure
/// answers Google's error JSON (`{"error": {"code", "message", "status", "details"}}`):
/// 1. the bearer access token: missing, unknown or expired 401 `UNAUTHENTICATED`;
/// 2. the project: not the account's 403 `PERMISSION_DENIED`;
/// 3. the body: `{"message": {…}}` of at most 64 KB, else 400 with a `BadRequest`;
/// 4. the message: an invalid token 400 `INVALID_ARGUMENT` with `FcmError` `INVALID_ARGUMENT`;
///    non-string data, reserved data keys, notification and data over 4,096 bytes, a bad
///    `android.priority` or `android.ttl` 400 with a `BadRequest` naming the field;
/// 5. scripted faults (``MockFCMFault``);
/// 6. a token ``unregister(_:)``-ed: 404 with `FcmError` `UNREGISTERED`;
/// 7. otherwise 200 `{"name": "projects/{project}/messages/{n}"}`, and the message is recorded.
///
/// ```swift
/// try await withMockFCMServer { server in
///     var configuration = FCMClient.Configuration(serviceAccount: server.serviceAccount)
///     configuration.endpoint = server.origin
///     configuration.additionalTrustRoots = [server.certificateAuthority]
///     …
/// }
/// ```
public final class MockFCMServer: Sendable {
    /// How the mock behaves.
    public struct Configuration: Sendable {
        /// Address to bind; loopback by default. The certificate covers 127.0.0.1, ::1 and localhost.
        public var host = "127.0.0.1"
        /// Port to bind; 0 picks a free one.
        public var port = 0
        /// The project messages must be sent for: the service account's `project_id`.
        public var projectID = "herald-mock"
        /// How long each access token lives (`expires_in`); Google's live an hour. At least a second.
        public var accessTokenLifetime: Duration = .seconds(3600)
        /// The service account's key; `nil` makes a fresh 2048-bit one.
        public var privateKey: _RSA.Signing.PrivateKey?
        /// Accepted messages kept for ``MockFCMServer/received``; past it the oldest are dropped.
        /// The counts stay exact.
        public var maximumRecords = 1_000_000
        /// Connections served at once; one past it waits to be accepted. Default 1024.
        public var maximumConnections = 1024
        /// The CA that issues the server's certificate; `nil` makes a fresh one. Give the one
        /// another mock uses, so one CA file trusts both.
        public var certificateIssuer: MockCertificateAuthority?

        public init() {}
    }

    /// The configuration it was started with.
    public let configuration: Configuration
    /// The port it listens on.
    public let port: Int
    /// `https://HOST:PORT`: the FCM endpoint a client sends to.
    public let origin: String
    /// The service account the mock accepts, its `token_uri` `https://HOST:PORT/token`.
    public let serviceAccount: FCMServiceAccount
    /// The CA certificate a client must trust, as PEM.
    public let certificateAuthorityPEM: String
    /// The CA certificate a client must trust, for NIOSSL trust roots.
    public let certificateAuthority: NIOSSLCertificate

    private let routes: MockFCMRoutes
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    private init(
        configuration: Configuration, port: Int, origin: String, serviceAccount: FCMServiceAccount, authority: MockCertificateAuthority,
        certificate: NIOSSLCertificate, routes: MockFCMRoutes, group: ServiceGroup, task: Task<Void, any Error>
    ) {
        self.configuration = configuration
        self.port = port
        self.origin = origin
        self.serviceAccount = serviceAccount
        self.certificateAuthorityPEM = authority.certificatePEM
        self.certificateAuthority = certificate
        self.routes = routes
        self.group = group
        self.task = task
    }

    /// Binds and starts serving; returns once it listens.
    public static func start(
        configuration: Configuration = Configuration(), logger: Logger = Logger(label: "herald.fcm.mock", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> MockFCMServer {
        let host = configuration.host
        let key = try configuration.privateKey ?? _RSA.Signing.PrivateKey(keySize: .bits2048)
        let authority = try configuration.certificateIssuer ?? MockCertificateAuthority(name: "Herald Mock FCM CA")
        let certificate = try authority.tlsCertificate
        let identity = try authority.issueServerIdentity()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.tlsCertificateChain.map { .certificate($0) }, privateKey: .privateKey(identity.tlsPrivateKey))
        tls.minimumTLSVersion = .tlsv12
        // A connection the mock closes gets a second to answer close_notify (NIOSSL's default
        // is 5 s, which a shutdown would wait out).
        tls.shutdownTimeout = .seconds(1)
        // ALPN offers h2 and http/1.1 (HTTP2UpgradeChannel sets them).
        let builder: HTTPServerBuilder = try .http2Upgrade(
            tlsConfiguration: tls, configuration: HTTP2UpgradeChannel.Configuration(idleTimeout: .seconds(300), gracefulCloseTimeout: .seconds(1)))

        let routes = MockFCMRoutes(configuration: configuration, logger: logger)
        let router = Router(context: MockFCMContext.self)
        routes.add(to: router)
        let (bound, listening) = AsyncStream<Int>.makeStream()
        let application = Application(
            router: router,
            server: builder,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: configuration.port),
                availableConnectionsDelegate: MaximumAvailableConnections(max(1, configuration.maximumConnections))),
            onServerRunning: { channel in listening.yield(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        let group = ServiceGroup(services: [application], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        let task = Task {
            defer { listening.finish() }
            try await group.run()
        }
        var ports = bound.makeAsyncIterator()
        guard let port = await ports.next() else {
            // The service stopped (its error is thrown here), or the caller was cancelled.
            task.cancel()
            try await task.value
            throw MockFCMServerError(description: "the mock FCM stopped before it listened on \(host):\(configuration.port)")
        }
        let origin = "https://" + (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(
                projectID: configuration.projectID, privateKeyID: Base64URL.encode(Array(key.publicKey.derRepresentation.suffix(20))), privateKey: key,
                clientEmail: "herald-mock@\(configuration.projectID).iam.gserviceaccount.com", tokenURI: origin + "/token")
        } catch {
            await group.triggerGracefulShutdown()
            _ = try? await task.value
            throw MockFCMServerError(description: "the mock FCM's service account: \(error.message)")
        }
        routes.account = account
        let server = MockFCMServer(
            configuration: configuration, port: port, origin: origin, serviceAccount: account, authority: authority, certificate: certificate, routes: routes,
            group: group, task: task)
        logger.info("mock FCM listening", metadata: ["origin": "\(origin)", "project": "\(configuration.projectID)"])
        return server
    }

    /// Stops listening and closes every connection: gracefully (HTTP/2 GOAWAY, idle HTTP/1.1
    /// connections closed), and after two seconds whatever is left.
    public func shutdown() async throws {
        await group.triggerGracefulShutdown()
        let task = self.task
        await withTaskGroup(of: Void.self) { waits in
            waits.addTask { _ = try? await task.value }
            waits.addTask {
                try? await Task.sleep(for: .seconds(2))
                task.cancel()
            }
            await waits.next()
            waits.cancelAll()
        }
        do {
            try await task.value
        } catch is CancellationError {
        }
    }

    /// The service account as a key file's JSON (with its private key): what a client loads.
    public var serviceAccountJSON: [UInt8] { serviceAccount.jsonRepresentation }

    // MARK: Tokens and faults

    /// Makes `token` answer 404 `UNREGISTERED` from now on, as an uninstalled app's does.
    public func unregister(_ token: String) {
        routes.state.unregister(token)
    }

    /// Every access token handed out so far expires now: the next message with one is answered
    /// 401 `UNAUTHENTICATED` (a token revoked or expired early).
    public func expireAccessTokens() {
        routes.state.expireAccessTokens()
    }

    /// Scripts `fault` for messages to `token`, after the faults scripted for it before.
    public func script(_ fault: MockFCMFault, for token: String) {
        routes.state.script(fault, for: token)
    }

    /// Scripts `fault` for every message, after the global faults scripted before; a token's
    /// own faults come first.
    public func scriptAll(_ fault: MockFCMFault) {
        routes.state.script(fault, for: nil)
    }

    /// Removes every scripted fault, global and per token.
    public func clearScripts() {
        routes.state.clearScripts()
    }

    // MARK: Inspection

    /// The latest accepted messages, up to ``Configuration/maximumRecords``, oldest first.
    public var received: [MockFCMMessage] { routes.state.received }
    /// Messages accepted (exact, whatever the record limit).
    public var receivedCount: Int { routes.state.receivedCount }
    /// Accepted messages no longer recorded, past ``Configuration/maximumRecords``.
    public var droppedRecordCount: Int { routes.state.droppedRecordCount }
    /// `messages:send` requests received, whatever they were answered.
    public var requestCount: Int { routes.state.requestCount }
    /// `POST /token` requests received, whatever they were answered.
    public var tokenRequestCount: Int { routes.state.tokenRequestCount }
    /// Access tokens handed out.
    public var accessTokensIssued: Int { routes.state.accessTokensIssued }
    /// Refused `messages:send` requests, counted by FCM error code (or Google status).
    public var rejectionsByReason: [String: Int] { routes.state.rejectionsByReason }
}

/// The mock FCM could not start.
public struct MockFCMServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
}
