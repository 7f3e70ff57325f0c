/// A notification that could not be delivered, for a reason other than an APNs rejection.
public struct APNSClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of failure.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// No connection could be made (refused, unreachable, DNS, proxy).
        public static let connectionFailed = Code(name: "connectionFailed")
        /// TLS failed: the server's certificate is not trusted, or the handshake broke off.
        public static let tlsFailed = Code(name: "tlsFailed")
        /// TLS succeeded but the server did not agree to HTTP/2 by ALPN (`h2`): it speaks HTTP/1.1
        /// only, so it is not APNs (a Web Push service may be: its client falls back to HTTP/1.1).
        public static let http2NotOffered = Code(name: "http2NotOffered")
        /// The address the server's name resolved to is one the client was told not to connect
        /// to (a private network's, for a Web Push endpoint); no packet was sent to it.
        public static let addressNotAllowed = Code(name: "addressNotAllowed")
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
