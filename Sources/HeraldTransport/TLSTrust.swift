import NIOSSL

/// Whether a TLS failure is the server's certificate not being trusted: issued by no CA the
/// client trusts, expired, or not for the name it connected to. Another attempt cannot mend that;
/// a CA file or the system's trust store can.
package enum TLSTrust {
    package static func isUntrusted(_ error: any Error) -> Bool {
        if let error = error as? NIOSSLError {
            switch error {
            case .unableToValidateCertificate: return true
            // BoringSSL's reason code is not public (`BoringSSLInternalError` keeps it private);
            // its text is BoringSSL's stable reason name.
            case .handshakeFailed(let underlying): return "\(underlying)".contains("CERTIFICATE_VERIFY_FAILED")
            default: return false
            }
        }
        if let error = error as? NIOSSLExtraError { return error == .failedToValidateHostname }
        if let error = error as? BoringSSLError { return "\(error)".contains("CERTIFICATE_VERIFY_FAILED") }
        return false
    }

    /// What a client's error says about it: the server, and what would mend it.
    package static func untrustedMessage(authority: String) -> String {
        "the certificate of \(authority) is not trusted: it is not issued by a CA this client trusts, has expired, or is not for that name"
    }
}
