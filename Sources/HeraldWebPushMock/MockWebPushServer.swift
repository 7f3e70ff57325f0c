import HeraldIdentity
@_exported import HeraldMockCore
import HeraldMockHTTP
import HeraldWebPush
import Logging
import NIOSSL

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A mock Web Push service that is also the browser: it hands out subscriptions (keeping each
/// one's private key and auth secret), checks every push request as a real push service does,
/// decrypts the message as the browser would, records it and answers like Apple's service, with
/// scripted faults. Over TLS, with HTTP/2 and HTTP/1.1 offered by ALPN.
///
/// A push request (`POST /push/{id}`, RFC 8030 §5) is checked in this order, and the first
/// failure answers with its status and `{"reason": …}`:
/// 1. the subscription: unknown 404 `NotFound`, unsubscribed 410 `Unregistered`;
/// 2. `Authorization: vapid t=…, k=…` (RFC 8292): a missing or invalid token (signature, `aud`
///    other than ``origin``, expired or `exp` more than a day ahead, `sub` neither `mailto:` nor
///    `https:`) 403 `BadJwtToken`; a `k` other than the subscription's `applicationServerKey`
///    403 `VapidPkHashMismatch`;
/// 3. `TTL` (required, whole seconds) 400 `BadTtl`; `Urgency` 400 `BadUrgency`; `Topic` (at most
///    32 base64url characters, and not 4n+1 of them, which Apple refuses) 400 `BadWebPushTopic`;
/// 4. `Content-Encoding: aes128gcm` (RFC 8291) 400 `BadContentEncoding`;
/// 5. a body over 4096 bytes 413 `PayloadTooLarge`;
/// 6. scripted faults (``MockWebPushFault``);
/// 7. decryption with the subscription's keys, when ``Configuration/decryptsMessages``: 400
///    `DecryptionFailed`. A real service cannot see the plaintext, but a browser drops a message
///    that does not decrypt, so the mock says so;
/// 8. otherwise 201 Created with `Location: /message/<id>`, and the message is recorded.
///
/// ```swift
/// try await withMockWebPushServer { server in
///     let subscription = server.subscribe()
///     // send to subscription with a client trusting server.certificateAuthority
///     #expect(server.received.first?.text == "hello")
/// }
/// ```
public final class MockWebPushServer: Sendable {
    /// How the mock behaves.
    public struct Configuration: Sendable {
        /// Address to bind; loopback by default. Endpoints name it, and the certificate covers
        /// 127.0.0.1, ::1 and localhost.
        public var host = "127.0.0.1"
        /// Port to bind; 0 picks a free one.
        public var port = 0
        /// Offer HTTP/2 and HTTP/1.1 by ALPN; `false` offers HTTP/1.1 only, to test a client's HTTP/1.1 path.
        public var offersHTTP2 = true
        /// Decrypt every message as the browser would; `false` records its size only (benchmarks:
        /// decryption is an ECDH per message).
        public var decryptsMessages = true
        /// Accepted messages kept for ``MockWebPushServer/received``; past it the oldest are
        /// dropped (``MockWebPushServer/droppedRecordCount``). The counts stay exact.
        public var maximumRecords = 1_000_000
        /// Subscriptions held; past it `POST /subscribe` answers 507 `TooManySubscriptions`
        /// (``MockWebPushServer/subscribe(applicationServerKey:)``, the test's own call, always succeeds).
        public var maximumSubscriptions = 1_000_000
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
    /// `https://HOST:PORT`: every subscription's endpoint starts with it, and every VAPID token's
    /// `aud` must equal it.
    public let origin: String
    /// The CA certificate a client must trust, as PEM.
    public let certificateAuthorityPEM: String
    /// The CA certificate a client must trust, for NIOSSL trust roots.
    public let certificateAuthority: NIOSSLCertificate

    private let routes: MockWebPushRoutes
    private let host: MockHTTPSHost

    private init(configuration: Configuration, origin: String, routes: MockWebPushRoutes, host: MockHTTPSHost) {
        self.configuration = configuration
        self.port = host.port
        self.origin = origin
        self.certificateAuthorityPEM = host.authority.certificatePEM
        self.certificateAuthority = host.certificate
        self.routes = routes
        self.host = host
    }

    /// Binds and starts serving; returns once it listens.
    public static func start(
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "herald.webpush.mock", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> MockWebPushServer {
        let host = configuration.host
        guard Self.origin(host: host, port: configuration.port) != nil else {
            throw MockWebPushServerError(description: "the mock Web Push service cannot make https://\(host):\(configuration.port) an endpoint origin")
        }
        let routes = MockWebPushRoutes(configuration: configuration, logger: logger)
        let listener: MockHTTPSHost
        do {
            listener = try await MockHTTPSHost.start(
                handler: routes, host: host, port: configuration.port, offersHTTP2: configuration.offersHTTP2,
                maximumConnections: configuration.maximumConnections, issuer: configuration.certificateIssuer, authorityName: "Herald Mock Web Push CA",
                logger: logger, onListening: { port in routes.origin = Self.origin(host: host, port: port) ?? "" })
        } catch let error as MockHTTPSHostError {
            throw MockWebPushServerError(description: "the mock Web Push service \(error.description)")
        }
        let server = MockWebPushServer(configuration: configuration, origin: routes.origin, routes: routes, host: listener)
        logger.info("mock Web Push listening", metadata: ["origin": "\(server.origin)", "http2": "\(configuration.offersHTTP2)"])
        return server
    }

    /// Stops listening and closes every connection: gracefully (HTTP/2 GOAWAY, idle HTTP/1.1
    /// connections closed), and after two seconds whatever is left.
    public func shutdown() async throws {
        try await host.shutdown()
    }

    /// The origin of endpoints on `host:port`, as a client computes a token's `aud` from one.
    private static func origin(host: String, port: Int) -> String? {
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host
        return URL(string: "https://\(bracketed):\(port)").flatMap(VAPID.origin(of:))
    }

    // MARK: Subscriptions and faults

    /// The policy a client needs to send to the mock's subscriptions: they are at 127.0.0.1, a
    /// loopback address that ``WebPushSubscription/Policy/standard`` refuses (set it as the
    /// client's ``WebPushClient/Configuration/subscriptionPolicy``, or `allowPrivateAddresses`
    /// in the gateway's `webPush`).
    public static let subscriptionPolicy = WebPushSubscription.Policy(allowsPrivateAddresses: true)

    /// A new subscription, as the browser would hand it to a page: endpoint
    /// `https://127.0.0.1:PORT/push/<random id>`, a fresh P-256 key and auth secret.
    ///
    /// - Parameter applicationServerKey: when given (the 65-byte uncompressed P-256 point a page
    ///   subscribes with), pushes must be signed by that key: 403 otherwise (RFC 8292 §4).
    public func subscribe(applicationServerKey: [UInt8]? = nil) -> WebPushSubscription {
        guard let subscription = routes.makeSubscription(applicationServerKey: applicationServerKey) else {
            preconditionFailure("an unbounded subscription was refused")
        }
        return subscription
    }

    /// Ends `subscription` as a user revoking it would: later pushes to it are answered 410.
    public func unsubscribe(_ subscription: WebPushSubscription) {
        routes.state.unsubscribe(subscription.endpoint.lastPathComponent)
    }

    /// Scripts `fault` for pushes to `subscription`, after the faults scripted for it before.
    public func script(_ fault: MockWebPushFault, for subscription: WebPushSubscription) {
        routes.state.script(fault, for: subscription.endpoint.lastPathComponent)
    }

    /// Scripts `fault` for every push request, after the global faults scripted before; a
    /// subscription's own faults come first.
    public func scriptAll(_ fault: MockWebPushFault) {
        routes.state.script(fault, for: nil)
    }

    /// Removes every scripted fault, global and per subscription.
    public func clearScripts() {
        routes.state.clearScripts()
    }

    // MARK: Inspection

    /// The latest accepted messages, up to ``Configuration/maximumRecords``, oldest first.
    public var received: [MockWebPushMessage] { routes.state.received }
    /// The recorded messages sent to `subscription`, oldest first.
    public func received(for subscription: WebPushSubscription) -> [MockWebPushMessage] {
        let id = subscription.endpoint.lastPathComponent
        return received.filter { $0.subscriptionID == id }
    }
    /// Messages accepted (exact, whatever the record limit).
    public var receivedCount: Int { routes.state.receivedCount }
    /// Accepted messages no longer recorded, past ``Configuration/maximumRecords``.
    public var droppedRecordCount: Int { routes.state.droppedRecordCount }
    /// Push requests received, whatever they were answered.
    public var requestCount: Int { routes.state.requestCount }
    /// Refused push requests, counted by the `reason` they were answered with.
    public var rejectionsByReason: [String: Int] { routes.state.rejectionsByReason }
    /// Subscriptions held, unsubscribed ones included (they answer 410).
    public var subscriptionCount: Int { routes.state.subscriptionCount }
}

/// The mock Web Push service could not start.
public struct MockWebPushServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
}
