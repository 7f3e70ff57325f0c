extension MockAPNSServer {
    /// What any client, friendly or not, can make the mock hold or do. Past a bound the mock
    /// refuses (REFUSED_STREAM, a closed connection) or ends the connection with GOAWAY and
    /// `ENHANCE_YOUR_CALM`; it never grows without limit and keeps serving other clients.
    ///
    /// With the defaults the mock holds at most about 48 MiB for clients however they behave:
    /// ``maximumBufferedRequestBytes`` for the requests of all connections, and per connection
    /// (at most ``maximumConnections``) about 0.5 MiB: one incomplete frame (16 KiB), one header
    /// block being gathered (``maximumHeaderBlockSize``), answers the client has not read
    /// (``maximumQueuedResponseBytes``, then the mock stops reading), and TLS buffers.
    public struct Limits: Sendable, Hashable {
        /// At most `count` events within any `window`.
        public struct RateLimit: Sendable, Hashable {
            public var count: Int
            public var window: Duration
            public init(_ count: Int, per window: Duration) {
                self.count = count
                self.window = window
            }
        }

        /// Connections served at once; a connection past it is closed as soon as it is accepted. Default 64.
        public var maximumConnections = 64
        /// Time from accepting a connection to the client's first SETTINGS (TLS and the HTTP/2
        /// preface included). Default 10 s.
        public var handshakeTimeout: Duration = .seconds(10)
        /// A connection with no open stream for this long is closed with GOAWAY. Default 5 minutes.
        public var idleTimeout: Duration = .seconds(300)
        /// A request must arrive whole, from HEADERS to END_STREAM, within this; otherwise its
        /// stream is reset with CANCEL. Default 30 s.
        public var requestTimeout: Duration = .seconds(30)
        /// Bytes of requests (headers and bodies) held at once over all connections; a stream
        /// that would pass it is refused with REFUSED_STREAM. Default 32 MiB.
        public var maximumBufferedRequestBytes = 32 << 20
        /// Bytes of answers written and not yet read by a client, past which the mock stops
        /// reading from it until it catches up. Default 256 KiB.
        public var maximumQueuedResponseBytes = 256 << 10
        /// The largest header block, compressed, over HEADERS and CONTINUATION. Default 64 KiB
        /// (the decoded list is limited to 16 KiB by SETTINGS_MAX_HEADER_LIST_SIZE).
        public var maximumHeaderBlockSize = 64 << 10
        /// CONTINUATION frames in one header block. Default 16.
        public var maximumContinuationFrames = 16
        /// How long a header block may stay open. Default 5 s.
        public var headerBlockTimeout: Duration = .seconds(5)
        /// Streams a client resets before their answer (CVE-2023-44487). Default 200 per 30 s.
        public var clientResets = RateLimit(200, per: .seconds(30))
        /// PING, SETTINGS and PRIORITY frames, unknown frame types and empty DATA frames. Default 200 per 30 s.
        public var controlFrames = RateLimit(200, per: .seconds(30))
        /// Streams the mock must reset for what the client sent on them (malformed requests,
        /// streams over the limit). Default 200 per 30 s.
        public var streamErrors = RateLimit(200, per: .seconds(30))
        /// Distinct provider tokens remembered for ``MockAPNSServer/providerTokenCount``; the
        /// oldest are forgotten first. Default 10,000.
        public var maximumRememberedProviderTokens = 10_000
        /// Broadcast channels over all apps (APNs's own limit of 10,000 per app applies too). Default 100,000.
        public var maximumChannels = 100_000

        public init() {}
    }
}
