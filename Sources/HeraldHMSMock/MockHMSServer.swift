import HeraldCore
import HeraldHMS
@_exported import HeraldMockCore
import HeraldMockHTTP
import Logging
import NIOSSL
import _CryptoExtras

/// A mock Huawei Push Kit with its OAuth token endpoint, over TLS with HTTP/2 and HTTP/1.1
/// offered by ALPN.
///
/// It makes app credentials of its own (a numeric client ID and a random secret, its token URI
/// `https://HOST:PORT/oauth2/v3/token`) and a service account (a fresh RSA key). It serves:
/// - `POST /oauth2/v3/token`: the client-credentials grant, answering access tokens living
///   ``Configuration/accessTokenLifetime`` or Huawei's `{"error": 1101, "sub_error", …}`;
/// - `POST /v1/{clientid}/messages:send` (the Android API) with the access token;
/// - `POST /v3/{projectId}/messages:send` (HarmonyOS NEXT) with a PS256 service-account JWT
///   (verified: `kid`, `iss` = `sub_account`, `aud` Huawei's token endpoint, `iat`, `exp`) and
///   the `push-type` header.
///
/// Both send APIs check the bearer, the body's shape, the tokens (count, format, repeats) and
/// the sizes with HeraldHMS's own validation, then scripted faults (``MockHMSFault``), then the
/// tokens marked ``invalidate(_:)``: a partial success (80100000) naming them, or 80300007
/// when every token is.
public final class MockHMSServer: Sendable {
    /// How the mock behaves.
    public struct Configuration: Sendable {
        /// Address to bind; loopback by default.
        public var host = "127.0.0.1"
        /// Port to bind; 0 picks a free one.
        public var port = 0
        /// The app's OAuth client ID (digits).
        public var clientID = "104567891"
        /// The service account's project.
        public var projectID = "101653523863785276"
        /// How long each access token lives (`expires_in`); Huawei's live an hour.
        public var accessTokenLifetime: Duration = .seconds(3600)
        /// The service account's key; `nil` makes a fresh 2048-bit one (Huawei's are 4096).
        public var privateKey: _RSA.Signing.PrivateKey?
        /// Accepted messages kept for ``MockHMSServer/received``.
        public var maximumRecords = 100_000
        /// Whether `messages:send` parses and validates each body (with HeraldHMS's own
        /// validation) and looks at its tokens. Default `true`. `false` is for benchmarks
        /// (`herald bench hms`), as the mock FCM's: the bearer, the client or project, v3's
        /// `push-type` and the body's size are still checked and scripted faults still apply,
        /// but no message is refused for its content, invalidated tokens do not apply, and a
        /// record's `tokens` are empty.
        public var validatesMessages = true
        /// Connections served at once.
        public var maximumConnections = 1024
        /// The CA that issues the server's certificate; `nil` makes a fresh one.
        public var certificateIssuer: MockCertificateAuthority?

        public init() {}
    }

    public let configuration: Configuration
    /// The port it listens on.
    public let port: Int
    /// `https://HOST:PORT`: the Push Kit endpoint a client sends to.
    public let origin: String
    /// The app credentials the mock accepts, their token URI the mock's.
    public let appCredentials: HMSAppCredentials
    /// The client secret the mock's token endpoint takes (made up for each mock): what an app's
    /// `clientSecretEnv` names, for `herald mock --hms-port` to hand to a gateway.
    public let clientSecret: String
    /// The service account whose JWTs the mock accepts.
    public let serviceAccount: HMSServiceAccount
    /// The CA certificate a client must trust, as PEM.
    public let certificateAuthorityPEM: String
    /// The CA certificate a client must trust, for NIOSSL trust roots.
    public let certificateAuthority: NIOSSLCertificate

    private let routes: MockHMSRoutes
    private let host: MockHTTPSHost

    private init(
        configuration: Configuration, origin: String, appCredentials: HMSAppCredentials, clientSecret: String, serviceAccount: HMSServiceAccount,
        routes: MockHMSRoutes, host: MockHTTPSHost
    ) {
        self.configuration = configuration
        self.clientSecret = clientSecret
        self.port = host.port
        self.origin = origin
        self.appCredentials = appCredentials
        self.serviceAccount = serviceAccount
        self.certificateAuthorityPEM = host.authority.certificatePEM
        self.certificateAuthority = host.certificate
        self.routes = routes
        self.host = host
    }

    /// Binds and starts serving; returns once it listens.
    public static func start(
        configuration: Configuration = Configuration(), logger: Logger = Logger(label: "herald.hms.mock", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> MockHMSServer {
        let key = try configuration.privateKey ?? _RSA.Signing.PrivateKey(keySize: .bits2048)
        var random = SystemRandomNumberGenerator()
        let secret = Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
        let account: HMSServiceAccount
        do {
            account = try HMSServiceAccount(
                projectID: configuration.projectID, keyID: Base64URL.encode(Array(key.publicKey.derRepresentation.suffix(16))),
                subAccount: "mock-sub-account-\(configuration.clientID)", privateKey: key)
        } catch {
            throw MockHMSServerError(description: "the mock Push Kit's service account: \(error.message)")
        }
        let routes = MockHMSRoutes(configuration: configuration, clientID: configuration.clientID, clientSecret: secret, account: account, logger: logger)
        let host: MockHTTPSHost
        do {
            host = try await MockHTTPSHost.start(
                handler: routes, host: configuration.host, port: configuration.port, offersHTTP2: true, maximumConnections: configuration.maximumConnections,
                issuer: configuration.certificateIssuer, authorityName: "Herald Mock Push Kit CA", logger: logger)
        } catch let error as MockHTTPSHostError {
            throw MockHMSServerError(description: "the mock Push Kit \(error.description)")
        }
        let origin = "https://" + (configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host) + ":\(host.port)"
        let credentials: HMSAppCredentials
        do {
            credentials = try HMSAppCredentials(clientID: configuration.clientID, clientSecret: secret, tokenURI: origin + "/oauth2/v3/token")
        } catch {
            try? await host.shutdown()
            throw MockHMSServerError(description: "the mock Push Kit's app credentials: \(error.message)")
        }
        logger.info("mock Push Kit listening", metadata: ["origin": "\(origin)", "client": "\(configuration.clientID)"])
        return MockHMSServer(
            configuration: configuration, origin: origin, appCredentials: credentials, clientSecret: secret, serviceAccount: account, routes: routes, host: host)
    }

    /// Stops listening and closes every connection.
    public func shutdown() async throws {
        try await host.shutdown()
    }

    /// The service account as a key file's JSON (with its private key): what a client loads.
    public var serviceAccountJSON: [UInt8] { serviceAccount.jsonRepresentation }

    // MARK: Tokens and faults

    /// Makes `token` invalid from now on: named in a partial success (80100000), or 80300007 when
    /// every token of a request is.
    public func invalidate(_ token: String) {
        routes.state.invalidate(token)
    }

    /// Every access token handed out so far expires now: the next v1 send with one is answered
    /// 401 80200003.
    public func expireAccessTokens() {
        routes.state.expireAccessTokens()
    }

    /// Scripts `fault` for the next sends, after the faults scripted before.
    public func script(_ fault: MockHMSFault) {
        routes.state.script(fault)
    }

    /// Removes every scripted fault.
    public func clearScripts() {
        routes.state.clearScripts()
    }

    // MARK: Inspection

    /// The latest accepted messages, oldest first.
    public var received: [MockHMSMessage] { routes.state.received }
    /// Messages accepted.
    public var receivedCount: Int { routes.state.receivedCount }
    /// `messages:send` requests received, whatever they were answered.
    public var requestCount: Int { routes.state.requestCount }
    /// `POST /oauth2/v3/token` requests received.
    public var tokenRequestCount: Int { routes.state.tokenRequestCount }
    /// Access tokens handed out.
    public var accessTokensIssued: Int { routes.state.accessTokensIssued }
    /// Refused sends, counted by result code or status.
    public var rejectionsByReason: [String: Int] { routes.state.rejectionsByReason }
}

/// The mock Push Kit could not start.
public struct MockHMSServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
}
