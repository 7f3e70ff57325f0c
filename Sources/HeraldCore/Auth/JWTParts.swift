/// A compact JWS (RFC 7515 §7.1) taken apart for verifying: its header and claims decoded from
/// base64url, its signature's bytes, and the signing input they were signed over. Shared by the
/// verifiers of VAPID tokens and FCM's OAuth assertions.
package struct JWTParts: Sendable {
    package var header: [UInt8]
    package var claims: [UInt8]
    package var signature: [UInt8]
    /// `header.claims`, as sent: what the signature covers.
    package var signingInput: [UInt8]

    /// `nil` unless `token` is three base64url parts separated by dots.
    package init?(_ token: some StringProtocol) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { return nil }
        self.header = header
        self.claims = claims
        self.signature = signature
        self.signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
    }
}
