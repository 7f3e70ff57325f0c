import HeraldTransport
import HeraldCore
import HeraldIdentity
import Metrics
import NIOSSL

extension APNSClient {
    /// How a client connects and behaves, grouped by concern. Every field has a documented
    /// default; only the environment and the credentials must be chosen. ``APNSClient`` checks it
    /// with ``validate()`` when it is made.
    public struct Configuration: Sendable {
        /// Where to send. There is no default environment.
        public var environment: APNSEnvironment
        /// Provider tokens or a client certificate.
        public var credentials: APNSCredentials
        /// Which certificate authorities are trusted for the server's certificate.
        public var trustRoots: TrustRoots = .system
        /// Connections, streams and the in-flight bound.
        public var pool = Pool()
        /// How long connecting and each attempt may take.
        public var timeouts = Timeouts()
        /// How dead connections are found.
        public var liveness = Liveness()
        /// Retries by reason, with back-off. Default: about 1 s before the first retry, up to 5 attempts.
        public var retry: RetryPolicy = .default
        /// An HTTP proxy to tunnel through with `CONNECT`; `nil` connects directly.
        public var proxy: Proxy?
        /// Where the client's swift-metrics counters and timers go.
        public var metrics = Metrics()

        public init(environment: APNSEnvironment, credentials: APNSCredentials) {
            self.environment = environment
            self.credentials = credentials
        }

        /// Connections, streams and the in-flight bound.
        public struct Pool: Sendable {
            /// The most connections the pool opens (lazily, when the open ones are busy), at least 1. Default 4.
            public var maximumConnections: Int = 4
            /// The most notifications in flight at once, over all connections, at least 1. Sending
            /// suspends at this bound, so memory stays flat however many notifications are sent: a
            /// bulk send holds at most this many in flight plus this many outcomes waiting to be
            /// taken. Default 1000.
            public var maximumInFlight: Int = 1000
            /// The most streams per connection; `nil` (default) spreads ``maximumInFlight`` over
            /// ``maximumConnections``. The server's own limit always applies too.
            public var maximumStreamsPerConnection: Int?
            /// Streams after which a connection is replaced by a fresh one, before client stream
            /// IDs (odd numbers up to 2^31-1) run out: 1 to ``streamIDLimit``. Default 1 billion.
            public var maximumStreamsPerConnectionLifetime: Int = 1_000_000_000
            /// Age after which a connection is replaced; `nil` (default) keeps it as long as it
            /// works: APNs asks for long-lived connections (apns-spec §1.3).
            public var maximumConnectionAge: Duration?
            /// Back-off between failed connection attempts: starts here and doubles. Default 100 ms.
            public var reconnectInitialBackoff: Duration = .milliseconds(100)
            /// The longest back-off between failed connection attempts. Default 10 s.
            public var reconnectMaximumBackoff: Duration = .seconds(10)
            /// Consecutive failed connection attempts, with no connection up, after which waiting
            /// notifications fail with ``APNSClientError/Code/connectionFailed``. At least 1; default 5.
            public var maximumConnectAttempts: Int = 5

            /// Client stream IDs are the odd numbers below 2^31 (RFC 9113 §5.1.1): a connection
            /// opens at most this many streams.
            public static let streamIDLimit = 1 << 30

            public init() {}

            /// The per-connection stream cap in effect (after ``Configuration/validate()``).
            var streamsPerConnection: Int {
                maximumStreamsPerConnection ?? max(1, (maximumInFlight + maximumConnections - 1) / maximumConnections)
            }
        }

        /// How long connecting and each attempt may take.
        public struct Timeouts: Sendable {
            /// TCP connect timeout, and the limit for TLS and HTTP/2 setup. Default 10 s.
            public var connect: Duration = .seconds(10)
            /// How long one attempt waits for its answer, counted from when it is queued. Default 15 s.
            public var request: Duration = .seconds(15)

            public init() {}
        }

        /// How dead connections are found: PINGs after silence, or when an answer is late.
        public struct Liveness: Sendable {
            /// PING a connection after this long without traffic, well under the 350 s after
            /// which NAT gateways drop idle flows. Default 60 s.
            public var idlePingInterval: Duration = .seconds(60)
            /// PING when an answer is this late. Default 3 s.
            public var responseOverdueAfter: Duration = .seconds(3)
            /// A PING unanswered for this long closes the connection; its notifications go elsewhere. Default 5 s.
            public var pingTimeout: Duration = .seconds(5)

            public init() {}
        }

        /// Where the client's swift-metrics counters and timers go.
        public struct Metrics: Sendable {
            /// Dimensions added to every metric of this client (e.g. `[("app", "orders")]`), to
            /// tell several clients apart.
            public var dimensions: [(String, String)] = []
            /// The factory that makes the metrics; `nil` (default) uses the global
            /// `MetricsSystem.factory`.
            public var factory: (any MetricsFactory)?

            public init() {}
        }

        /// Checks every field against its documented range.
        ///
        /// - Throws: ``APNSClientError`` with code ``APNSClientError/Code/invalidConfiguration``,
        ///   naming the field, its value and what it must be.
        public func validate() throws(APNSClientError) {
            func check(_ ok: Bool, _ field: String, _ value: Any, _ rule: String) throws(APNSClientError) {
                if !ok { throw APNSClientError(.invalidConfiguration, "configuration.\(field) is \(value); it must be \(rule)") }
            }
            try check(pool.maximumConnections >= 1, "pool.maximumConnections", pool.maximumConnections, "at least 1")
            try check(pool.maximumInFlight >= 1, "pool.maximumInFlight", pool.maximumInFlight, "at least 1")
            if let streams = pool.maximumStreamsPerConnection {
                try check(streams >= 1, "pool.maximumStreamsPerConnection", streams, "at least 1, or nil")
            }
            let lifetime = pool.maximumStreamsPerConnectionLifetime
            try check(
                (1...Pool.streamIDLimit).contains(lifetime), "pool.maximumStreamsPerConnectionLifetime", lifetime,
                "from 1 to \(Pool.streamIDLimit), as client stream IDs run out after that"
            )
            if let age = pool.maximumConnectionAge { try check(age > .zero, "pool.maximumConnectionAge", age, "positive, or nil") }
            try check(pool.reconnectInitialBackoff >= .zero, "pool.reconnectInitialBackoff", pool.reconnectInitialBackoff, "zero or more")
            try check(
                pool.reconnectMaximumBackoff >= pool.reconnectInitialBackoff, "pool.reconnectMaximumBackoff", pool.reconnectMaximumBackoff,
                "at least pool.reconnectInitialBackoff (\(pool.reconnectInitialBackoff))"
            )
            try check(pool.maximumConnectAttempts >= 1, "pool.maximumConnectAttempts", pool.maximumConnectAttempts, "at least 1")
            try check(timeouts.connect > .zero, "timeouts.connect", timeouts.connect, "positive")
            try check(timeouts.request > .zero, "timeouts.request", timeouts.request, "positive")
            try check(liveness.idlePingInterval > .zero, "liveness.idlePingInterval", liveness.idlePingInterval, "positive")
            try check(liveness.responseOverdueAfter > .zero, "liveness.responseOverdueAfter", liveness.responseOverdueAfter, "positive")
            try check(liveness.pingTimeout > .zero, "liveness.pingTimeout", liveness.pingTimeout, "positive")
            if let proxy {
                try check((1...65535).contains(proxy.port), "proxy.port", proxy.port, "from 1 to 65535")
                try check(!proxy.host.isEmpty, "proxy.host", "empty", "a host name or address")
            }
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
