/// A notification that could not be delivered, for a reason other than an APNs rejection.
public struct APNSClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of failure.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// No connection could be made (refused, unreachable, DNS, proxy).
        public static let connectionFailed = Code(name: "connectionFailed")
        /// TLS failed: the server's certificate is not trusted, or it does not speak HTTP/2 (ALPN `h2`).
        public static let tlsFailed = Code(name: "tlsFailed")
        /// The connection was lost before an answer, every time it was tried.
        public static let connectionLost = Code(name: "connectionLost")
        /// No answer within the request timeout, every time it was tried.
        public static let timedOut = Code(name: "timedOut")
        /// Its apns-expiration passed before it could be delivered.
        public static let expired = Code(name: "expired")
        /// The client was shut down.
        public static let shutdown = Code(name: "shutdown")
        /// The credentials cannot be used (e.g. the push type needs token authentication).
        public static let invalidCredentials = Code(name: "invalidCredentials")
        /// The client's configuration is out of range (``APNSClient/Configuration/validate()``).
        public static let invalidConfiguration = Code(name: "invalidConfiguration")
        /// The server answered something that is not an APNs response.
        public static let protocolError = Code(name: "protocolError")
        public var description: String { name }
    }

    public var code: Code
    /// What happened, in words. Never holds secrets.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
