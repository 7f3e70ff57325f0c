import HeraldCore
import HeraldHTTP2
import NIOCore

/// Writes the header fields of a notification request straight into the outbound buffer, with the
/// header encodings APNs asks for (apns-spec §1.3): `:path` and `authorization` literal without
/// indexing; `apns-id`, `apns-expiration` and `apns-collapse-id` indexed the first time, then
/// literal without indexing; everything else indexed.
enum RequestEncoder {
    /// Writes the header fields of a notification request into its header block (the frame
    /// around it is ``HTTP2Connection/writeHeaders(streamID:endStream:into:_:)``'s).
    ///
    /// `memo` is the connection's: the notification's own fields (topic to collapse ID; not one
    /// with an `apns-id`) are written as the last request's were, byte for byte, while they and
    /// the encoder's table are the same (a broadcast's every request, or a bulk send's). HPACK
    /// encoding was 9 % of the event loops' samples in a profile of a gateway's broadcast, most
    /// of it these fields: a search of the table and a few bytes written one at a time, each.
    static func writeFields(
        for notification: PushNotification, authority: String, authorization: ByteBuffer?,
        memo: inout FieldsMemo, encoder: inout HPACKBlockEncoder, into block: inout ByteBuffer
    ) {
        encoder.indexed(HPACKBlockEncoder.Static.methodPOST, into: &block)
        encoder.indexed(HPACKBlockEncoder.Static.schemeHTTPS, into: &block)
        writePath(token: notification.token, into: &block)
        encoder.indexing(name: ":authority", value: authority, staticNameIndex: HPACKBlockEncoder.Static.authority, into: &block)
        if var authorization { block.writeBuffer(&authorization) }
        // Compared where they lie, not copied out first: a copy retains the fields' object,
        // which every request of a broadcast shares with the threads that made and answer them.
        // The same object is equal at the cost of two pointers compared (``PushHeaders/==``).
        if memo.generation == encoder.generation, memo.headers == notification.headers {
            block.writeBytes(memo.bytes)
            return
        }
        let fields = notification.headers
        let start = block.writerIndex
        let generation = encoder.generation
        if let topic = fields.topic { encoder.indexing(name: "apns-topic", value: topic, into: &block) }
        encoder.indexing(name: "apns-push-type", value: fields.pushType.rawValue, into: &block)
        encoder.indexing(name: "apns-priority", value: fields.effectivePriority.description, into: &block)
        if let expiration = fields.expiration { encoder.literal(name: "apns-expiration", value: expiration.description, into: &block) }
        if let collapseID = fields.collapseID { encoder.literal(name: "apns-collapse-id", value: collapseID, into: &block) }
        if let apnsID = fields.apnsID {
            // Each notification's own, as a rule: nothing to write again.
            encoder.literal(name: "apns-id", value: apnsID.uuidString.lowercased(), into: &block)
            return
        }
        // Kept only when the table did not change: written again, an added field would be
        // added twice (the second time it is indexed, not literal).
        if encoder.generation == generation {
            memo = FieldsMemo(headers: fields, generation: generation, bytes: block.getBytes(at: start, length: block.writerIndex - start) ?? [])
        }
    }

    /// A connection's last notification fields as encoded (``writeFields(for:authority:authorization:memo:encoder:into:)``).
    struct FieldsMemo {
        /// Meaningless while ``generation`` is -1, which no encoder has: the memo is empty.
        fileprivate(set) var headers = PushHeaders()
        fileprivate var generation = -1
        fileprivate(set) var bytes: [UInt8] = []
    }

    /// The header fields of a channel-management or broadcast request (apns-spec §1.9), or of
    /// another protocol's request through the pool.
    static func writeFields(
        for request: OtherRequest, authority: String, authorization: ByteBuffer?, encoder: inout HPACKBlockEncoder, into block: inout ByteBuffer
    ) {
        if let head = request.sharedHead {
            writeFields(for: head, bodyCount: request.body?.count, authority: authority, authorization: authorization, encoder: &encoder, into: &block)
            return
        }
        writeMethod(request.method, encoder: &encoder, into: &block)
        encoder.indexed(HPACKBlockEncoder.Static.schemeHTTPS, into: &block)
        encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.path, value: request.path, into: &block)
        encoder.indexing(name: ":authority", value: authority, staticNameIndex: HPACKBlockEncoder.Static.authority, into: &block)
        if var authorization { block.writeBuffer(&authorization) }
        for field in request.headers {
            encoder.literal(name: field.name, value: field.value, into: &block)
        }
    }

    /// A request whose head many share (``SharedRequestHead``): its path and content type are
    /// the same for every one, so indexed (a byte each once the peer's table has them); its
    /// authorization was encoded once; only `content-length` is written for this request.
    private static func writeFields(
        for head: SharedRequestHead, bodyCount: Int?, authority: String, authorization: ByteBuffer?,
        encoder: inout HPACKBlockEncoder, into block: inout ByteBuffer
    ) {
        writeMethod(head.method, encoder: &encoder, into: &block)
        encoder.indexed(HPACKBlockEncoder.Static.schemeHTTPS, into: &block)
        encoder.indexing(name: ":path", value: head.path, staticNameIndex: HPACKBlockEncoder.Static.path, into: &block)
        encoder.indexing(name: ":authority", value: authority, staticNameIndex: HPACKBlockEncoder.Static.authority, into: &block)
        if let authorization { block.writeImmutableBuffer(authorization) }
        if let field = head.authorizationField { block.writeImmutableBuffer(field) }
        if let contentType = head.contentType {
            encoder.indexing(name: "content-type", value: contentType, staticNameIndex: HPACKBlockEncoder.Static.contentType, into: &block)
        }
        if let bodyCount {
            encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.contentLength, value: String(bodyCount), into: &block)
        }
    }

    private static func writeMethod(_ method: String, encoder: inout HPACKBlockEncoder, into block: inout ByteBuffer) {
        switch method {
        case "POST": encoder.indexed(HPACKBlockEncoder.Static.methodPOST, into: &block)
        case "GET": encoder.indexed(HPACKBlockEncoder.Static.methodGET, into: &block)
        default: encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.methodGET, value: method, into: &block)
        }
    }

    /// `:path: /3/device/<token>`, literal without indexing (§1.3, §1.4).
    private static func writePath(token: DeviceToken, into output: inout ByteBuffer) {
        HPACKBlockEncoder.writeInteger(HPACKBlockEncoder.Static.path, prefixBits: 4, pattern: 0x00, into: &output)
        let hex = token.hex.utf8
        HPACKBlockEncoder.writeInteger(10 + hex.count, prefixBits: 7, pattern: 0x00, into: &output)
        output.writeStaticString("/3/device/")
        output.writeString(token.hex)
    }

    /// The encoded `authorization: bearer <JWT>` field, made once per token and copied into each
    /// request: literal without indexing (§1.3).
    static func authorizationField(_ token: ProviderToken) -> ByteBuffer {
        var field = ByteBuffer()
        HPACKBlockEncoder().literal(staticNameIndex: HPACKBlockEncoder.Static.authorization, value: token.authorization, into: &field)
        return field
    }
}
