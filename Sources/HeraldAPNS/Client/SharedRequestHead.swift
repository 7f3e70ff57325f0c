import HeraldHTTP2
import NIOCore

/// The head that many requests share, made once and sent with each of their bodies: FCM's
/// `POST /v1/projects/{project}/messages:send` with one access token. Through the pool
/// (`APNSClient.Exchange(_:body:)`) its path and constant fields are indexed in HPACK
/// (a byte each after a connection's first request, for the peer to decode as little), its
/// secret field is encoded once and copied, and only the body's length is written anew: no
/// header list is made per request.
package final class SharedRequestHead: Sendable {
    /// `POST`, `GET`, …
    let method: String
    /// The same for every request: indexed.
    let path: String
    /// `content-type`, indexed: it never changes.
    let contentType: String?
    /// `authorization`, already encoded: literal, never indexed, as any credential
    /// (RFC 7541 §7.1.3). Made once per access token, not once per request.
    let authorizationField: ByteBuffer?

    /// A head for `method` on `path`. `authorization` is the field's whole value
    /// (`Bearer …`); it is kept only in its encoded form.
    package init(method: String = "POST", path: String, contentType: String?, authorization: String?) {
        self.method = method
        self.path = path
        self.contentType = contentType
        self.authorizationField = authorization.map { value in
            var field = ByteBuffer()
            HPACKBlockEncoder().literalNeverIndexed(staticNameIndex: HPACKBlockEncoder.Static.authorization, value: value, into: &field)
            return field
        }
    }
}
