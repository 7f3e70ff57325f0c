/// Why a request sent through the transport got no answer its platform could judge: the
/// connection, TLS, HTTP/2 or a deadline failed, or the client was shut down. Each platform's
/// client turns it into its own error (`APNSClientError`, `WebPushSendError`, `FCMSendError`).
package struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Code: String, Sendable, Hashable {
        /// No connection could be made (refused, unreachable, DNS, proxy).
        case connectionFailed
        /// TLS failed: the handshake broke off, or the TLS configuration could not be built.
        case tlsFailed
        /// The server's certificate is not trusted (``TLSTrust``): a CA file or the system's
        /// trust store mends it, another attempt does not.
        case untrusted
        /// TLS succeeded but the server did not agree to HTTP/2 by ALPN (`h2`, RFC 9113 §3.2): it
        /// speaks HTTP/1.1 only. A client that can speak HTTP/1.1 falls back on this case.
        case http2NotOffered
        /// The address the server's name resolved to is one the client was told not to connect
        /// to (``ConnectGuard``); no packet was sent to it.
        case addressNotAllowed
        /// The connection was lost before an answer.
        case connectionLost
        /// No answer within the request timeout.
        case timedOut
        /// The client was shut down.
        case shutdown
        /// The platform's credential could not be made (a provider token could not be signed).
        case invalidCredentials
        /// The server broke HTTP/2.
        case protocolError
    }

    package var code: Code
    /// What happened, in words. Never holds secrets.
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Failures that another attempt at connecting will not mend: the pool stops trying at once.
    package var isPermanent: Bool {
        switch code {
        case .tlsFailed, .untrusted, .http2NotOffered, .addressNotAllowed, .invalidCredentials: true
        default: false
        }
    }

    package var description: String { "\(code.rawValue): \(message)" }
}
