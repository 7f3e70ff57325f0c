import HeraldIdentity

extension LegacyClient {
    /// How a legacy client connects and recovers. The gateway and the certificate must be chosen;
    /// every other field has a documented default.
    public struct Configuration: Sendable {
        /// The gateway to send to. There is no default.
        public var gateway: LegacyEndpoint
        /// The push certificate: the binary interface takes certificate authentication only (apns-spec §4).
        public var identity: CertificateIdentity
        /// Which certificate authorities are trusted for the gateway's certificate.
        public var trustRoots: TrustRoots = .system
        /// The command notifications are framed with. Default ``LegacyCommand/frame`` (command 2):
        /// 2048-byte payloads and priority. Errors on command 0 carry no identifier, so they
        /// cannot be matched to a notification; prefer 1 or 2.
        public var command: LegacyCommand = .frame
        /// Sent notifications kept for re-sending after an error response (the ring buffer).
        /// Notifications further back than this when an error arrives are reported as
        /// ``LegacyError/Code/possiblyLost``. Default 10 000.
        public var bufferCapacity = 10_000
        /// How long frames wait to be batched into one TCP write (flushed sooner when the next
        /// frame would take it past 65 535 bytes). A negative value writes each frame at once.
        /// Default 10 ms.
        public var framingTimeout: Duration = .milliseconds(10)
        /// How long after it was written, without an error response, a notification counts as
        /// accepted: the binary interface says nothing on success (apns-spec §4). Keep it above
        /// the gateway's response time. Default 1 s.
        public var settleInterval: Duration = .seconds(1)
        /// The most notifications in flight (queued, written and unsettled) at once; sending
        /// suspends at this bound. It caps the rate at about this many per ``settleInterval``.
        /// Default 100 000.
        public var maximumInFlight = 100_000
        /// TCP connect and TLS handshake limit. Default 10 s.
        public var connectTimeout: Duration = .seconds(10)
        /// A notification written on this many connections that closed without an error
        /// response fails with ``LegacyError/Code/connectionFailed`` (it may have been
        /// delivered). Default 3.
        public var maximumDrops = 3
        /// Back-off between failed connection attempts: starts here and doubles. Default 100 ms.
        public var reconnectInitialBackoff: Duration = .milliseconds(100)
        /// The longest back-off. Default 10 s.
        public var reconnectMaximumBackoff: Duration = .seconds(10)
        /// Consecutive failed connection attempts after which waiting notifications fail with
        /// ``LegacyError/Code/connectionFailed``. Default 5.
        public var maximumConnectAttempts = 5

        public init(gateway: LegacyEndpoint, identity: CertificateIdentity) {
            self.gateway = gateway
            self.identity = identity
        }
    }
}
