import HeraldCore
import HeraldHTTP2
import NIOCore

/// Writes the HEADERS of a notification request straight into the outbound buffer, with the
/// header encodings APNs asks for (apns-spec §1.3): `:path` and `authorization` literal without
/// indexing; `apns-id`, `apns-expiration` and `apns-collapse-id` indexed the first time, then
/// literal without indexing; everything else indexed.
enum RequestEncoder {
    static func writeHeaders(
        for notification: PushNotification, streamID: HTTP2StreamNumber, authority: String, authorization: ByteBuffer?,
        connection: inout HTTP2Connection, into output: inout ByteBuffer
    ) {
        // Write the frame header with a placeholder length, encode the block in place, then patch
        // the length: no intermediate buffer.
        let frameStart = output.writerIndex
        output.writeHTTP2FrameHeader(length: 0, type: .headers, flags: HTTP2Flag.endHeaders, streamID: streamID)
        let blockStart = output.writerIndex
        connection.encoder.beginBlock(into: &output)
        connection.encoder.indexed(HPACKBlockEncoder.Static.methodPOST, into: &output)
        connection.encoder.indexed(HPACKBlockEncoder.Static.schemeHTTPS, into: &output)
        writePath(token: notification.token, into: &output)
        connection.encoder.indexing(name: ":authority", value: authority, staticNameIndex: HPACKBlockEncoder.Static.authority, into: &output)
        if var authorization { output.writeBuffer(&authorization) }
        let fields = notification.headers
        if let topic = fields.topic { connection.encoder.indexing(name: "apns-topic", value: topic, into: &output) }
        connection.encoder.indexing(name: "apns-push-type", value: fields.pushType.rawValue, into: &output)
        connection.encoder.indexing(name: "apns-priority", value: fields.effectivePriority.description, into: &output)
        if let expiration = fields.expiration { connection.encoder.literal(name: "apns-expiration", value: expiration.description, into: &output) }
        if let collapseID = fields.collapseID { connection.encoder.literal(name: "apns-collapse-id", value: collapseID, into: &output) }
        if let apnsID = fields.apnsID { connection.encoder.literal(name: "apns-id", value: apnsID.uuidString.lowercased(), into: &output) }
        let blockLength = output.writerIndex - blockStart
        let maximumFrameSize = connection.remote.maxFrameSize
        if blockLength <= maximumFrameSize {
            output.setInteger(UInt8(truncatingIfNeeded: blockLength >> 16), at: frameStart)
            output.setInteger(UInt16(truncatingIfNeeded: blockLength), at: frameStart + 1)
        } else {
            // Rare: split into HEADERS and CONTINUATION frames.
            let block = output.getSlice(at: blockStart, length: blockLength)!
            output.moveWriterIndex(to: frameStart)
            output.writeHTTP2Headers(streamID: streamID, block: block, endStream: false, maximumFrameSize: maximumFrameSize)
        }
    }

    /// The HEADERS of a channel-management or broadcast request (apns-spec §1.9). The request
    /// ends with them when it has no body.
    static func writeHeaders(
        for request: OtherRequest, streamID: HTTP2StreamNumber, authority: String, authorization: ByteBuffer?,
        connection: inout HTTP2Connection, into output: inout ByteBuffer
    ) {
        var block = ByteBuffer()
        connection.encoder.beginBlock(into: &block)
        switch request.method {
        case "POST": connection.encoder.indexed(HPACKBlockEncoder.Static.methodPOST, into: &block)
        case "GET": connection.encoder.indexed(HPACKBlockEncoder.Static.methodGET, into: &block)
        default: connection.encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.methodGET, value: request.method, into: &block)
        }
        connection.encoder.indexed(HPACKBlockEncoder.Static.schemeHTTPS, into: &block)
        connection.encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.path, value: request.path, into: &block)
        connection.encoder.indexing(name: ":authority", value: authority, staticNameIndex: HPACKBlockEncoder.Static.authority, into: &block)
        if var authorization { block.writeBuffer(&authorization) }
        for field in request.headers {
            connection.encoder.literal(name: field.name, value: field.value, into: &block)
        }
        output.writeHTTP2Headers(streamID: streamID, block: block, endStream: request.body == nil, maximumFrameSize: connection.remote.maxFrameSize)
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
