import HeraldCore
import HeraldFCM
@_exported import HeraldMockCore
import HeraldMockHTTP
import Logging
import NIOSSL
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
        /// Whether `messages:send` parses and validates each message (step 4, with HeraldFCM's
        /// own validation) and looks at its token. Default `true`. `false` is for benchmarks
        /// (`herald bench fcm`), keeping the mock's cost per message near the mock APNs's, which
        /// reads no payload: the access token, the project and the body's size are still
        /// checked and global faults still apply, but no message is refused for its content,
        /// per-token faults and unregistered tokens do not apply, and a record's `token` is
        /// empty and its `message` null.
        public var validatesMessages = true
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
    private let host: MockHTTPSHost

    private init(configuration: Configuration, origin: String, serviceAccount: FCMServiceAccount, routes: MockFCMRoutes, host: MockHTTPSHost) {
        self.configuration = configuration
        self.port = host.port
        self.origin = origin
        self.serviceAccount = serviceAccount
        self.certificateAuthorityPEM = host.authority.certificatePEM
        self.certificateAuthority = host.certificate
        self.routes = routes
        self.host = host
    }

    /// Binds and starts serving; returns once it listens.
    public static func start(
        configuration: Configuration = Configuration(), logger: Logger = Logger(label: "herald.fcm.mock", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> MockFCMServer {
        let key = try configuration.privateKey ?? _RSA.Signing.PrivateKey(keySize: .bits2048)
        let routes = MockFCMRoutes(configuration: configuration, logger: logger)
        let host: MockHTTPSHost
        do {
            host = try await MockHTTPSHost.start(
                handler: routes, host: configuration.host, port: configuration.port, offersHTTP2: true, maximumConnections: configuration.maximumConnections,
                issuer: configuration.certificateIssuer, authorityName: "Herald Mock FCM CA", logger: logger)
        } catch let error as MockHTTPSHostError {
            throw MockFCMServerError(description: "the mock FCM \(error.description)")
        }
        let origin = "https://" + (configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host) + ":\(host.port)"
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(
                projectID: configuration.projectID, privateKeyID: Base64URL.encode(Array(key.publicKey.derRepresentation.suffix(20))), privateKey: key,
                clientEmail: "herald-mock@\(configuration.projectID).iam.gserviceaccount.com", tokenURI: origin + "/token")
        } catch {
            try? await host.shutdown()
            throw MockFCMServerError(description: "the mock FCM's service account: \(error.message)")
        }
        // Set before anyone knows the port: no token request comes before it.
        routes.account = account
        logger.info("mock FCM listening", metadata: ["origin": "\(origin)", "project": "\(configuration.projectID)"])
        return MockFCMServer(configuration: configuration, origin: origin, serviceAccount: account, routes: routes, host: host)
    }

    /// Stops listening and closes every connection: gracefully (HTTP/2 GOAWAY, idle HTTP/1.1
    /// connections closed), and after two seconds whatever is left.
    public func shutdown() async throws {
        try await host.shutdown()
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
