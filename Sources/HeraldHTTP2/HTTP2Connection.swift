import NIOCore
import NIOHPACK

/// The connection-level half of HTTP/2 for one side of one connection, as a plain value: it
/// reads frames, answers what the protocol answers by itself (SETTINGS and PING acknowledgements,
/// receive-window updates), decodes header blocks, and hands stream events to its owner. It does
/// no I/O: bytes come in, bytes to write and events go out.
package struct HTTP2Connection {
    package enum Role: Sendable { case client, server }

    /// SETTINGS values (RFC 9113 §6.5.2), with the protocol's defaults.
    package struct Settings: Sendable, Equatable {
        package var headerTableSize = 4096
        package var enablePush = 1
        package var maxConcurrentStreams = Int.max
        package var initialWindowSize = 65_535
        package var maxFrameSize = 16_384
        package var maxHeaderListSize = Int.max
        package init() {}
    }

    /// What happened on a stream, or to the connection as a whole.
    package enum Event {
        case headers(streamID: HTTP2StreamNumber, headers: HPACKHeaders, endStream: Bool)
        case data(streamID: HTTP2StreamNumber, data: ByteBuffer, endStream: Bool)
        case resetStream(streamID: HTTP2StreamNumber, code: HTTP2ErrorCode)
        /// A stream's send window grew.
        case streamWindowUpdate(streamID: HTTP2StreamNumber, increment: Int)
        /// The connection's send window grew.
        case connectionWindowUpdate
        /// The peer's settings changed (the first time: the connection is ready). `initialWindowDelta`
        /// applies to every open stream's send window.
        case settings(first: Bool, maxConcurrentStreams: Int, initialWindowDelta: Int)
        case pingAck(UInt64)
        /// The peer acknowledged this side's SETTINGS.
        case settingsAck
        case goAway(lastStreamID: HTTP2StreamNumber, code: HTTP2ErrorCode, debugData: ByteBuffer)
    }

    package let role: Role
    /// What this side advertises.
    package let local: Settings
    /// What the peer advertised.
    package private(set) var remote = Settings()
    /// Bytes of DATA this side may still send on the connection.
    package private(set) var connectionSendWindow = 65_535
    /// Header compression towards the peer.
    package var encoder = HPACKBlockEncoder()

    private var parser: HTTP2FrameParser
    private var decoder: HPACKDecoder
    private var receiveWindow = 65_535
    private var receivedSinceUpdate = 0
    private let connectionReceiveWindow: Int
    private var headerBlock: (streamID: HTTP2StreamNumber, endStream: Bool, block: ByteBuffer)?
    private var prefaceBytesExpected: Int
    private var sawSettings = false

    /// The largest header block accepted, across CONTINUATION frames.
    static let maximumHeaderBlock = 64 << 10

    /// - Parameters:
    ///   - connectionReceiveWindow: the connection-level receive window to open up to at once
    ///     (the protocol starts every connection at 64 KiB).
    package init(role: Role, local: Settings, connectionReceiveWindow: Int = 1 << 24) {
        self.role = role
        self.local = local
        self.connectionReceiveWindow = max(65_535, min(connectionReceiveWindow, http2MaximumWindow))
        self.parser = HTTP2FrameParser(maximumFrameSize: local.maxFrameSize)
        self.decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: local.headerTableSize)
        self.decoder.maxHeaderListSize = min(local.maxHeaderListSize, 1 << 20)
        self.prefaceBytesExpected = role == .server ? http2ClientPreface.count : 0
    }

    /// The bytes that open the connection: the client's magic, this side's SETTINGS, and a
    /// WINDOW_UPDATE opening the connection receive window.
    package mutating func start(into output: inout ByteBuffer) {
        if role == .client { output.writeBytes(http2ClientPreface) }
        var settings: [(HTTP2SettingID, Int)] = []
        let defaults = Settings()
        if local.headerTableSize != defaults.headerTableSize { settings.append((.headerTableSize, local.headerTableSize)) }
        if role == .client { settings.append((.enablePush, 0)) }
        if local.maxConcurrentStreams != defaults.maxConcurrentStreams { settings.append((.maxConcurrentStreams, local.maxConcurrentStreams)) }
        if local.initialWindowSize != defaults.initialWindowSize { settings.append((.initialWindowSize, local.initialWindowSize)) }
        if local.maxFrameSize != defaults.maxFrameSize { settings.append((.maxFrameSize, local.maxFrameSize)) }
        if local.maxHeaderListSize != defaults.maxHeaderListSize { settings.append((.maxHeaderListSize, local.maxHeaderListSize)) }
        output.writeHTTP2Settings(settings)
        if connectionReceiveWindow > receiveWindow {
            output.writeHTTP2WindowUpdate(streamID: 0, increment: connectionReceiveWindow - receiveWindow)
            receiveWindow = connectionReceiveWindow
        }
    }

    /// Whether the peer's first SETTINGS has arrived.
    package var isReady: Bool { sawSettings }

    /// Takes the DATA bytes this side is about to send out of the connection send window.
    package mutating func consumeSendWindow(_ count: Int) {
        connectionSendWindow -= count
    }

    /// Processes bytes read from the peer. Stream events are appended to `events`; frames the
    /// protocol answers by itself are appended to `output`.
    ///
    /// - Throws: a connection error; the owner sends GOAWAY with its code and closes.
    package mutating func receive(_ bytes: inout ByteBuffer, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        if prefaceBytesExpected > 0 {
            let count = min(prefaceBytesExpected, bytes.readableBytes)
            let offset = http2ClientPreface.count - prefaceBytesExpected
            guard bytes.readableBytesView.prefix(count).elementsEqual(http2ClientPreface[offset..<offset + count]) else {
                throw HTTP2ConnectionError(.protocolError, "the client did not send the HTTP/2 connection preface")
            }
            bytes.moveReaderIndex(forwardBy: count)
            prefaceBytesExpected -= count
            if bytes.readableBytes == 0 { return }
        }
        parser.append(&bytes)
        while let frame = try parser.next() {
            try process(frame, events: &events, output: &output)
        }
    }

    // MARK: Frames

    private mutating func process(_ frame: HTTP2WireFrame, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        if !sawSettings && frame.type != HTTP2FrameType.settings.rawValue {
            throw HTTP2ConnectionError(.protocolError, "the first frame must be SETTINGS (RFC 9113 §3.4)")
        }
        if let pending = headerBlock {
            guard frame.type == HTTP2FrameType.continuation.rawValue, frame.streamID == pending.streamID else {
                throw HTTP2ConnectionError(.protocolError, "expected CONTINUATION for stream \(pending.streamID)")
            }
        }
        guard let type = HTTP2FrameType(rawValue: frame.type) else { return }  // unknown types are ignored (§5.5)
        var payload = frame.payload
        switch type {
        case .data:
            try requireStream(frame)
            let length = payload.readableBytes
            receiveWindow -= length
            guard receiveWindow >= 0 else { throw HTTP2ConnectionError(.flowControlError, "DATA beyond the connection window") }
            receivedSinceUpdate += length
            if receivedSinceUpdate >= connectionReceiveWindow / 2 {
                output.writeHTTP2WindowUpdate(streamID: 0, increment: receivedSinceUpdate)
                receiveWindow += receivedSinceUpdate
                receivedSinceUpdate = 0
            }
            try stripPadding(frame, &payload)
            events.append(.data(streamID: frame.streamID, data: payload, endStream: frame.has(HTTP2Flag.endStream)))

        case .headers:
            try requireStream(frame)
            try stripPadding(frame, &payload)
            if frame.has(HTTP2Flag.priority) {
                guard payload.readableBytes >= 5 else { throw HTTP2ConnectionError(.frameSizeError, "HEADERS priority too short") }
                payload.moveReaderIndex(forwardBy: 5)
            }
            let endStream = frame.has(HTTP2Flag.endStream)
            if frame.has(HTTP2Flag.endHeaders) {
                try decode(payload, streamID: frame.streamID, endStream: endStream, events: &events)
            } else {
                headerBlock = (frame.streamID, endStream, payload)
            }

        case .continuation:
            guard var pending = headerBlock else {
                throw HTTP2ConnectionError(.protocolError, "CONTINUATION without HEADERS")
            }
            pending.block.writeBuffer(&payload)
            guard pending.block.readableBytes <= Self.maximumHeaderBlock else {
                throw HTTP2ConnectionError(.enhanceYourCalm, "header block larger than \(Self.maximumHeaderBlock) bytes")
            }
            if frame.has(HTTP2Flag.endHeaders) {
                headerBlock = nil
                try decode(pending.block, streamID: pending.streamID, endStream: pending.endStream, events: &events)
            } else {
                headerBlock = pending
            }

        case .priority:
            try requireStream(frame)
            guard payload.readableBytes == 5 else { throw HTTP2ConnectionError(.frameSizeError, "PRIORITY must be 5 bytes") }

        case .rstStream:
            try requireStream(frame)
            guard let code = payload.readInteger(as: UInt32.self), payload.readableBytes == 0 else {
                throw HTTP2ConnectionError(.frameSizeError, "RST_STREAM must be 4 bytes")
            }
            events.append(.resetStream(streamID: frame.streamID, code: HTTP2ErrorCode(code)))

        case .settings:
            guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "SETTINGS on a stream") }
            if frame.has(HTTP2Flag.ack) {
                guard payload.readableBytes == 0 else { throw HTTP2ConnectionError(.frameSizeError, "SETTINGS ACK with a payload") }
                events.append(.settingsAck)
                return
            }
            guard payload.readableBytes % 6 == 0 else { throw HTTP2ConnectionError(.frameSizeError, "SETTINGS length not a multiple of 6") }
            let before = remote.initialWindowSize
            while let id = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
                try apply(id: id, value: Int(value))
            }
            output.writeHTTP2SettingsAck()
            let first = !sawSettings
            sawSettings = true
            events.append(.settings(first: first, maxConcurrentStreams: remote.maxConcurrentStreams, initialWindowDelta: remote.initialWindowSize - before))

        case .pushPromise:
            throw HTTP2ConnectionError(.protocolError, "PUSH_PROMISE is not allowed (push is disabled)")

        case .ping:
            guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "PING on a stream") }
            guard let data = payload.readInteger(as: UInt64.self), payload.readableBytes == 0 else {
                throw HTTP2ConnectionError(.frameSizeError, "PING must be 8 bytes")
            }
            if frame.has(HTTP2Flag.ack) {
                events.append(.pingAck(data))
            } else {
                output.writeHTTP2Ping(data, ack: true)
            }

        case .goAway:
            guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "GOAWAY on a stream") }
            guard let last = payload.readInteger(as: UInt32.self), let code = payload.readInteger(as: UInt32.self) else {
                throw HTTP2ConnectionError(.frameSizeError, "GOAWAY too short")
            }
            events.append(.goAway(lastStreamID: last & 0x7FFF_FFFF, code: HTTP2ErrorCode(code), debugData: payload))

        case .windowUpdate:
            guard let raw = payload.readInteger(as: UInt32.self), payload.readableBytes == 0 else {
                throw HTTP2ConnectionError(.frameSizeError, "WINDOW_UPDATE must be 4 bytes")
            }
            let increment = Int(raw & 0x7FFF_FFFF)
            if frame.streamID == 0 {
                guard increment > 0 else { throw HTTP2ConnectionError(.protocolError, "WINDOW_UPDATE of 0 on the connection") }
                connectionSendWindow += increment
                guard connectionSendWindow <= http2MaximumWindow else {
                    throw HTTP2ConnectionError(.flowControlError, "connection window beyond 2^31-1")
                }
                events.append(.connectionWindowUpdate)
            } else {
                events.append(.streamWindowUpdate(streamID: frame.streamID, increment: increment))
            }
        }
    }

    private func requireStream(_ frame: HTTP2WireFrame) throws(HTTP2ConnectionError) {
        guard frame.streamID != 0 else {
            throw HTTP2ConnectionError(.protocolError, "frame type \(frame.type) needs a stream")
        }
    }

    private func stripPadding(_ frame: HTTP2WireFrame, _ payload: inout ByteBuffer) throws(HTTP2ConnectionError) {
        guard frame.has(HTTP2Flag.padded) else { return }
        guard let padding = payload.readInteger(as: UInt8.self), Int(padding) <= payload.readableBytes else {
            throw HTTP2ConnectionError(.protocolError, "padding longer than the frame")
        }
        payload = payload.getSlice(at: payload.readerIndex, length: payload.readableBytes - Int(padding))!
    }

    private mutating func decode(_ block: ByteBuffer, streamID: HTTP2StreamNumber, endStream: Bool, events: inout [Event]) throws(HTTP2ConnectionError) {
        var block = block
        do {
            // Every block is decoded, even for streams the owner ignores, to keep the table in step.
            let headers = try decoder.decodeHeaders(from: &block)
            events.append(.headers(streamID: streamID, headers: headers, endStream: endStream))
        } catch {
            throw HTTP2ConnectionError(.compressionError, "header block could not be decoded: \(error)")
        }
    }

    private mutating func apply(id: UInt16, value: Int) throws(HTTP2ConnectionError) {
        switch HTTP2SettingID(rawValue: id) {
        case .headerTableSize:
            remote.headerTableSize = value
            encoder.peerAllowsTableSize(value)
        case .enablePush:
            guard value <= 1 else { throw HTTP2ConnectionError(.protocolError, "SETTINGS_ENABLE_PUSH must be 0 or 1") }
            remote.enablePush = value
        case .maxConcurrentStreams:
            remote.maxConcurrentStreams = value
        case .initialWindowSize:
            guard value <= http2MaximumWindow else { throw HTTP2ConnectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE beyond 2^31-1") }
            remote.initialWindowSize = value
        case .maxFrameSize:
            guard (16_384...16_777_215).contains(value) else { throw HTTP2ConnectionError(.protocolError, "SETTINGS_MAX_FRAME_SIZE out of range") }
            remote.maxFrameSize = value
        case .maxHeaderListSize:
            remote.maxHeaderListSize = value
        case nil:
            break  // unknown settings are ignored (§6.5.2)
        }
    }
}
