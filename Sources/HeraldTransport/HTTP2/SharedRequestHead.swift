import HeraldHTTP2
import NIOCore

/// The head that many requests share, made once and sent with each of their bodies: FCM's
/// `POST /v1/projects/{project}/messages:send` with one access token. Through the pool
/// (``HTTP2Request/init(_:body:)``) its path and constant fields are indexed in HPACK
/// (a byte each after a connection's first request, for the peer to decode as little), its
/// secret field is encoded once and copied, and only the body's length is written anew: no
/// header list is made per request.
package final class SharedRequestHead: Sendable {
    /// `POST`, `GET`, …
    package let method: String
    /// The same for every request: indexed.
    package let path: String
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

    /// Writes the head of a request with a body of `bodyCount` bytes: its path and content type
    /// are the same for every one, so indexed (a byte each once the peer's table has them); its
    /// authorization was encoded once; only `content-length` is written for this request.
    func writeFields(
        bodyCount: Int?, authority: String, authorization: ByteBuffer?, encoder: inout HPACKBlockEncoder, into block: inout ByteBuffer
    ) {
        Self.writeMethod(method, encoder: &encoder, into: &block)
        encoder.indexed(HPACKBlockEncoder.Static.schemeHTTPS, into: &block)
        encoder.indexing(name: ":path", value: path, staticNameIndex: HPACKBlockEncoder.Static.path, into: &block)
        encoder.indexing(name: ":authority", value: authority, staticNameIndex: HPACKBlockEncoder.Static.authority, into: &block)
        if let authorization { block.writeImmutableBuffer(authorization) }
        if let authorizationField { block.writeImmutableBuffer(authorizationField) }
        if let contentType {
            encoder.indexing(name: "content-type", value: contentType, staticNameIndex: HPACKBlockEncoder.Static.contentType, into: &block)
        }
        if let bodyCount {
            encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.contentLength, value: String(bodyCount), into: &block)
        }
    }

    /// `:method`, indexed for the two the static table has.
    static func writeMethod(_ method: String, encoder: inout HPACKBlockEncoder, into block: inout ByteBuffer) {
        switch method {
        case "POST": encoder.indexed(HPACKBlockEncoder.Static.methodPOST, into: &block)
        case "GET": encoder.indexed(HPACKBlockEncoder.Static.methodGET, into: &block)
        default: encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.methodGET, value: method, into: &block)
        }
    }
}
