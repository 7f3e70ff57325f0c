import HeraldCore
import HeraldIdentity
import NIOSSL

extension APNSClient {
    /// How a client connects and behaves. Every field has a documented default; only the
    /// environment and the credentials must be chosen.
    public struct Configuration: Sendable {
        /// Where to send. There is no default environment.
        public var environment: APNSEnvironment
        /// Provider tokens or a client certificate.
        public var credentials: APNSCredentials
        /// Which certificate authorities are trusted for the server's certificate.
        public var trustRoots: TrustRoots = .system
        /// The most connections the pool opens (lazily, when the open ones are busy). Default 4.
        public var maximumConnections: Int = 4
        /// The most notifications in flight at once, over all connections. Sending suspends at
        /// this bound, so memory stays flat however many notifications are sent: a bulk send holds
        /// at most this many in flight plus this many outcomes waiting to be taken. Default 1000.
        public var maximumInFlight: Int = 1000
        /// The most streams per connection; `nil` spreads ``maximumInFlight`` over
        /// ``maximumConnections``. The server's own limit always applies too.
        public var maximumStreamsPerConnection: Int?
        /// TCP connect timeout, and the limit for TLS and HTTP/2 setup. Default 10 s.
        public var connectTimeout: Duration = .seconds(10)
        /// How long one attempt waits for its answer. Default 15 s.
        public var requestTimeout: Duration = .seconds(15)
        /// PING a connection after this long without traffic, well under the 350 s after which
        /// NAT gateways drop idle flows. Default 60 s.
        public var idlePingInterval: Duration = .seconds(60)
        /// PING when an answer is this late. Default 3 s.
        public var responseOverdueAfter: Duration = .seconds(3)
        /// A PING unanswered for this long closes the connection; its notifications go elsewhere. Default 5 s.
        public var pingTimeout: Duration = .seconds(5)
        /// Retries by reason, with back-off. Default: about 1 s before the first retry, up to 5 attempts.
        public var retry: RetryPolicy = .default
        /// Back-off between failed connection attempts: starts here and doubles. Default 100 ms.
        public var reconnectInitialBackoff: Duration = .milliseconds(100)
        /// The longest back-off between failed connection attempts. Default 10 s.
        public var reconnectMaximumBackoff: Duration = .seconds(10)
        /// Consecutive failed connection attempts, with no connection up, after which waiting
        /// notifications fail with ``APNSClientError/Code/connectionFailed``. Default 5.
        public var maximumConnectAttempts: Int = 5
        /// Streams after which a connection is replaced by a fresh one, before client stream IDs
        /// (odd numbers up to 2^31-1) run out. Default 1 billion.
        public var maximumStreamsPerConnectionLifetime: Int = 1_000_000_000
        /// Age after which a connection is replaced; `nil` (default) keeps it as long as it works:
        /// APNs asks for long-lived connections (apns-spec §1.3).
        public var maximumConnectionAge: Duration?
        /// An HTTP proxy to tunnel through with `CONNECT`; `nil` connects directly.
        public var proxy: Proxy?
        /// Dimensions added to every swift-metrics metric of this client (e.g. `[("app", "orders")]`),
        /// to tell several clients apart.
        public var metricsDimensions: [(String, String)] = []

        public init(environment: APNSEnvironment, credentials: APNSCredentials) {
            self.environment = environment
            self.credentials = credentials
        }

        /// The per-connection stream cap in effect.
        var streamsPerConnection: Int {
            maximumStreamsPerConnection ?? max(1, (maximumInFlight + maximumConnections - 1) / maximumConnections)
        }
    }

    /// Trusted certificate authorities for the server's certificate. Verification is always on.
    public typealias TrustRoots = HeraldIdentity.TrustRoots

    /// An HTTP proxy reached with `CONNECT`.
    public struct Proxy: Sendable, Hashable {
        public var host: String
        public var port: Int
        /// A `Proxy-Authorization` header value, such as `Basic dXNlcjpwYXNz`. Never logged.
        public var authorization: String?

        public init(host: String, port: Int, authorization: String? = nil) {
            self.host = host
            self.port = port
            self.authorization = authorization
        }
    }
}

/// How the client proves who it is to APNs (apns-spec §2, §7).
public enum APNSCredentials: Sendable {
    /// Token authentication: a provider token signed with this key, shared by every connection in
    /// the process (one per team and key) and renewed by APNs's rules.
    case providerToken(ProviderKey)
    /// Token authentication with a given issuer, e.g. one with its own renewal policy or clock.
    case providerTokens(ProviderTokenIssuer)
    /// Certificate authentication: a TLS client certificate. Requests without a topic get the
    /// certificate's topic (its subject UID).
    case certificate(CertificateIdentity)
}
