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

    /// What a connection keeps for the notifications it writes (``HTTP2Rules/makeConnectionState()``).
    final class Memo {
        var fields = FieldsMemo()
    }

    /// A connection's last notification fields as encoded (``writeFields(for:authority:authorization:memo:encoder:into:)``).
    struct FieldsMemo {
        /// Meaningless while ``generation`` is -1, which no encoder has: the memo is empty.
        fileprivate(set) var headers = PushHeaders()
        fileprivate var generation = -1
        fileprivate(set) var bytes: [UInt8] = []
    }

    /// `:path: /3/device/<token>`, literal without indexing (§1.3, §1.4).
    private static func writePath(token: DeviceToken, into output: inout ByteBuffer) {
        HPACKBlockEncoder.writeInteger(HPACKBlockEncoder.Static.path, prefixBits: 4, pattern: 0x00, into: &output)
        let hex = token.hex.utf8
        HPACKBlockEncoder.writeInteger(10 + hex.count, prefixBits: 7, pattern: 0x00, into: &output)
        output.writeStaticString("/3/device/")
        output.writeString(token.hex)
    }
}
