import NIOCore
import NIOHPACK

/// The connection-level half of HTTP/2 for one side of one connection, as a plain value: it reads
/// frames, keeps every open stream's state and flow-control windows (RFC 9113 §5.1, §6.9), answers
/// what the protocol answers by itself (SETTINGS and PING acknowledgements, window updates, stream
/// errors), checks each message (§8), and hands stream events to its owner. It does no I/O: bytes
/// come in, bytes to write and events go out.
///
/// Everything a peer can make it hold is bounded: the frame parser by SETTINGS_MAX_FRAME_SIZE, a
/// header block by ``Limits/maximumHeaderBlockSize``, the streams by SETTINGS_MAX_CONCURRENT_STREAMS,
/// remembered resets by ``Limits/recentlyResetStreams``, and what the peer makes it write by the
/// rate limits of ``Limits``. Going past a bound is a connection error the owner answers with GOAWAY.
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
        /// A request head (on a server) or the final response head (on a client), checked by
        /// RFC 9113 §8. Informational (1xx) responses are not reported.
        case headers(streamID: HTTP2StreamNumber, headers: HPACKHeaders, endStream: Bool)
        /// Trailers: the peer's message ends with them.
        case trailers(streamID: HTTP2StreamNumber, headers: HPACKHeaders)
        case data(streamID: HTTP2StreamNumber, data: ByteBuffer, endStream: Bool)
        /// The stream ended before both sides finished: the peer reset it (`byPeer`), or this side
        /// did because the peer broke a rule on it (the RST_STREAM is already written).
        case streamReset(streamID: HTTP2StreamNumber, code: HTTP2ErrorCode, byPeer: Bool)
        /// The peer's settings changed (the first time: the connection is ready).
        case settings(first: Bool, maxConcurrentStreams: Int)
        /// The peer acknowledged this side's SETTINGS; the next pending change is in force.
        case settingsAcknowledged
        case pingAck(UInt64)
        case goAway(lastStreamID: HTTP2StreamNumber, code: HTTP2ErrorCode, debugData: ByteBuffer)
    }

    package let role: Role
    package let limits: Limits
    /// What this side advertised last.
    package internal(set) var local: Settings
    /// What this side advertised and the peer has acknowledged (the initial SETTINGS count at once).
    package internal(set) var localInForce: Settings
    /// What the peer advertised.
    package internal(set) var remote = Settings()
    /// Bytes of DATA this side may still send on the connection.
    package internal(set) var connectionSendWindow = 65_535
    /// Header compression towards the peer.
    package var encoder = HPACKBlockEncoder()

    var parser: HTTP2FrameParser
    var decoder: HPACKDecoder
    var streams: [HTTP2StreamNumber: HTTP2Stream] = [:]
    /// Streams the peer opened that are still open here.
    package internal(set) var peerStreamCount = 0
    /// The most streams open at once while the stream limit now in force applied, counted when
    /// each was accepted: one comparison per stream on the hot path.
    private var peakPeerStreamsUnderCurrentLimit = 0
    /// The same for each earlier limit this side set, filled in only when a limit changes.
    private var peakPeerStreamsUnderEarlierLimits: [Int: Int] = [:]
    /// Whether this side's stream limit has changed since the connection began.
    package private(set) var streamLimitChanged = false

    /// The most streams open at once, counted when each was accepted, by the stream limit then
    /// in force. Keyed by this side's own settings, so it holds as many entries as it has set limits.
    package var peakPeerStreamsByLimit: [Int: Int] {
        var peaks = peakPeerStreamsUnderEarlierLimits
        peaks[localInForce.maxConcurrentStreams] = max(peaks[localInForce.maxConcurrentStreams] ?? 0, peakPeerStreamsUnderCurrentLimit)
        return peaks
    }
    /// The highest stream ID each side has opened: every lower one that is not open is closed.
    package internal(set) var highestPeerStreamID: HTTP2StreamNumber = 0
    package internal(set) var highestLocalStreamID: HTTP2StreamNumber = 0
    var recentlyReset: HTTP2RecentStreams
    /// Body bytes waiting for the peer's flow-control windows, over all streams.
    package internal(set) var pendingBodyBytes = 0
    /// Streams with body bytes waiting for the connection window, oldest first.
    var waitingForConnectionWindow = CircularBuffer<HTTP2StreamNumber>(initialCapacity: 8)
    /// Local settings sent and not yet acknowledged, oldest first.
    var pendingLocalSettings: [Settings] = []
    /// The last stream ID of the GOAWAY this side sent, or received.
    package internal(set) var goAwaySent: HTTP2StreamNumber?
    package internal(set) var goAwayReceived: HTTP2StreamNumber?

    var receiveWindow = 65_535
    var receivedSinceUpdate = 0
    let connectionReceiveWindow: Int
    var headerBlock: PendingHeaderBlock?
    var prefaceBytesExpected: Int
    var sawSettings = false

    var now = NIODeadline.uptimeNanoseconds(0)
    var peerResets: HTTP2EventCounter
    var controlFrames: HTTP2EventCounter
    var streamErrors: HTTP2EventCounter
    /// Frames written in answer to the peer since its output was last being read.
    var queuedControlFrames = 0
    /// The connection error this side raised: nothing more is read after it.
    package internal(set) var failure: HTTP2ConnectionError?

    /// A header block spread over HEADERS and CONTINUATION frames, gathered before decoding.
    struct PendingHeaderBlock {
        var streamID: HTTP2StreamNumber
        var endStream: Bool
        var selfDependent: Bool
        var block: ByteBuffer
        var continuations = 0
        var startedAt: NIODeadline
    }

    /// - Parameters:
    ///   - connectionReceiveWindow: the connection-level receive window to open up to at once
    ///     (the protocol starts every connection at 64 KiB).
    package init(role: Role, local: Settings, limits: Limits = Limits(), connectionReceiveWindow: Int = 1 << 24) {
        self.role = role
        self.local = local
        self.localInForce = local
        self.limits = limits
        self.connectionReceiveWindow = max(65_535, min(connectionReceiveWindow, http2MaximumWindow))
        self.parser = HTTP2FrameParser(maximumFrameSize: local.maxFrameSize)
        self.decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: local.headerTableSize)
        self.decoder.maxHeaderListSize = min(local.maxHeaderListSize, 1 << 20)
        self.prefaceBytesExpected = role == .server ? http2ClientPreface.count : 0
        self.recentlyReset = HTTP2RecentStreams(capacity: limits.recentlyResetStreams)
        self.peerResets = HTTP2EventCounter(limits.peerResets)
        self.controlFrames = HTTP2EventCounter(limits.controlFrames)
        self.streamErrors = HTTP2EventCounter(limits.streamErrors)
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
        // The first SETTINGS bind at once; only later changes wait for the acknowledgement.
        pendingLocalSettings.append(local)
        if connectionReceiveWindow > receiveWindow {
            output.writeHTTP2WindowUpdate(streamID: 0, increment: connectionReceiveWindow - receiveWindow)
            receiveWindow = connectionReceiveWindow
        }
    }

    /// Whether the peer's first SETTINGS has arrived.
    package var isReady: Bool { sawSettings }

    /// Streams open or half closed, opened by either side.
    package var openStreamCount: Int { streams.count }

    /// Bytes of storage held for what the peer sent: incomplete frames and a header block being gathered.
    package var retainedBytes: Int { parser.retainedBytes + (headerBlock?.block.capacity ?? 0) }

    /// Streams this side remembers having reset.
    package var recentlyResetCount: Int { recentlyReset.count }

    /// Processes bytes read from the peer. Stream events are appended to `events`; frames the
    /// protocol answers by itself are appended to `output`.
    ///
    /// - Parameters:
    ///   - now: the time, for the rate limits.
    ///   - outputWritable: whether what this side writes is being read by the peer (the channel is
    ///     writable); answers written while it is not count against ``Limits/maximumQueuedControlFrames``.
    /// - Throws: a connection error; the owner sends GOAWAY with its code (``writeGoAway(code:message:into:)``) and closes.
    package mutating func receive(
        _ bytes: inout ByteBuffer, now: NIODeadline = .now(), outputWritable: Bool = true, events: inout [Event], output: inout ByteBuffer
    ) throws(HTTP2ConnectionError) {
        // After a connection error the peer's bytes are dropped, not buffered: a TLS layer
        // waiting for close_notify may still deliver them.
        if let failure { throw failure }
        do {
            try receiveFrames(&bytes, now: now, outputWritable: outputWritable, events: &events, output: &output)
        } catch {
            failure = error
            parser = HTTP2FrameParser(maximumFrameSize: local.maxFrameSize)
            headerBlock = nil
            throw error
        }
    }

    private mutating func receiveFrames(
        _ bytes: inout ByteBuffer, now: NIODeadline, outputWritable: Bool, events: inout [Event], output: inout ByteBuffer
    ) throws(HTTP2ConnectionError) {
        self.now = now
        if outputWritable { queuedControlFrames = 0 }
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

    /// Checks the limits that depend on time alone: a header block left open too long.
    package mutating func checkTimeouts(now: NIODeadline) throws(HTTP2ConnectionError) {
        if let block = headerBlock, now - block.startedAt > limits.headerBlockTimeout {
            let error = HTTP2ConnectionError(.enhanceYourCalm, "header block open for more than \(limits.headerBlockTimeout.shortDescription)")
            failure = error
            headerBlock = nil
            throw error
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
        guard let type = HTTP2FrameType(rawValue: frame.type) else {
            try countControlFrame()  // unknown types are ignored (§5.5), within limits
            return
        }
        switch type {
        case .data: try receiveData(frame, events: &events, output: &output)
        case .headers: try receiveHeaders(frame, events: &events, output: &output)
        case .continuation: try receiveContinuation(frame, events: &events, output: &output)
        case .priority: try receivePriority(frame, events: &events, output: &output)
        case .rstStream: try receiveReset(frame, events: &events)
        case .settings: try receiveSettings(frame, events: &events, output: &output)
        case .pushPromise: throw HTTP2ConnectionError(.protocolError, "PUSH_PROMISE is not allowed (push is disabled)")
        case .ping: try receivePing(frame, events: &events, output: &output)
        case .goAway: try receiveGoAway(frame, events: &events)
        case .windowUpdate: try receiveWindowUpdate(frame, events: &events, output: &output)
        }
    }

    /// Where a stream stands (RFC 9113 §5.1).
    enum StreamPlace {
        case open
        /// Never opened: higher than any stream its side has opened.
        case idle
        /// Opened once and closed since (or skipped over); `resetHere`: this side reset it lately.
        case closed(resetHere: Bool)
    }

    func place(of id: HTTP2StreamNumber) -> StreamPlace {
        if streams[id] != nil { return .open }
        let highest = isPeerInitiated(id) ? highestPeerStreamID : highestLocalStreamID
        if id > highest { return .idle }
        return .closed(resetHere: recentlyReset.contains(id))
    }

    /// Clients open odd streams, servers even ones (§5.1.1).
    func isPeerInitiated(_ id: HTTP2StreamNumber) -> Bool {
        (id & 1 == 1) == (role == .server)
    }

    private func requireStream(_ frame: HTTP2WireFrame) throws(HTTP2ConnectionError) {
        guard frame.streamID != 0 else {
            throw HTTP2ConnectionError(.protocolError, "\(Self.name(frame.type)) on stream 0")
        }
    }

    static func name(_ type: UInt8) -> String {
        guard let known = HTTP2FrameType(rawValue: type) else { return "frame type \(type)" }
        switch known {
        case .data: return "DATA"
        case .headers: return "HEADERS"
        case .priority: return "PRIORITY"
        case .rstStream: return "RST_STREAM"
        case .settings: return "SETTINGS"
        case .pushPromise: return "PUSH_PROMISE"
        case .ping: return "PING"
        case .goAway: return "GOAWAY"
        case .windowUpdate: return "WINDOW_UPDATE"
        case .continuation: return "CONTINUATION"
        }
    }

    private mutating func receiveData(_ frame: HTTP2WireFrame, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        try requireStream(frame)
        // The whole frame counts against the connection window, whatever becomes of it (§6.9).
        let length = frame.payload.readableBytes
        receiveWindow -= length
        guard receiveWindow >= 0 else { throw HTTP2ConnectionError(.flowControlError, "DATA beyond the connection window") }
        receivedSinceUpdate += length
        if receivedSinceUpdate >= connectionReceiveWindow / 2 {
            output.writeHTTP2WindowUpdate(streamID: 0, increment: receivedSinceUpdate)
            receiveWindow += receivedSinceUpdate
            receivedSinceUpdate = 0
        }
        var payload = frame.payload
        if frame.has(HTTP2Flag.padded) {
            guard let padding = payload.readInteger(as: UInt8.self), Int(padding) <= payload.readableBytes else {
                throw HTTP2ConnectionError(.protocolError, "DATA padding longer than the frame")
            }
            payload = payload.getSlice(at: payload.readerIndex, length: payload.readableBytes - Int(padding))!
        }
        let id = frame.streamID
        let endStream = frame.has(HTTP2Flag.endStream)
        switch place(of: id) {
        case .idle:
            throw HTTP2ConnectionError(.protocolError, "DATA on idle stream \(id)")
        case .closed(resetHere: true):
            return  // late frames of a stream this side reset
        case .closed(resetHere: false):
            throw HTTP2ConnectionError(.streamClosed, "DATA on closed stream \(id)")
        case .open:
            break
        }
        var stream = streams[id]!
        if stream.remoteClosed { return try streamError(id, .streamClosed, events: &events, output: &output) }
        if stream.inbound == .awaitingResponse { return try streamError(id, .protocolError, events: &events, output: &output) }
        stream.receiveWindow -= length
        if stream.receiveWindow < 0 { return try streamError(id, .flowControlError, events: &events, output: &output) }
        stream.receivedLength += payload.readableBytes
        if let expected = stream.expectedLength, stream.receivedLength > expected || (endStream && stream.receivedLength != expected) {
            return try streamError(id, .protocolError, events: &events, output: &output)  // content-length (§8.1.1)
        }
        if payload.readableBytes == 0 && !endStream { try countControlFrame() }
        if endStream {
            stream.remoteClosed = true
        } else if stream.receiveWindow <= localInForce.initialWindowSize / 2 {
            let increment = localInForce.initialWindowSize - stream.receiveWindow
            output.writeHTTP2WindowUpdate(streamID: id, increment: increment)
            stream.receiveWindow += increment
        }
        streams[id] = stream
        events.append(.data(streamID: id, data: payload, endStream: endStream))
        if endStream { remoteEnded(id, output: &output) }
    }

    private mutating func receiveHeaders(_ frame: HTTP2WireFrame, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        try requireStream(frame)
        var payload = frame.payload
        let padded = frame.has(HTTP2Flag.padded)
        let prioritized = frame.has(HTTP2Flag.priority)
        let fixed = (padded ? 1 : 0) + (prioritized ? 5 : 0)
        guard payload.readableBytes >= fixed else {
            throw HTTP2ConnectionError(.frameSizeError, "HEADERS too short for its padding and priority fields")
        }
        let padding = padded ? Int(payload.readInteger(as: UInt8.self)!) : 0
        // Padding may not eat into the priority fields or past the frame (§6.2).
        guard padding <= payload.readableBytes - (prioritized ? 5 : 0) else {
            throw HTTP2ConnectionError(.protocolError, "HEADERS padding longer than the frame")
        }
        var selfDependent = false
        if prioritized {
            let dependency = payload.readInteger(as: UInt32.self)! & 0x7FFF_FFFF
            payload.moveReaderIndex(forwardBy: 1)  // weight
            selfDependent = dependency == frame.streamID
        }
        let fragment = payload.getSlice(at: payload.readerIndex, length: payload.readableBytes - padding)!
        let endStream = frame.has(HTTP2Flag.endStream)
        if frame.has(HTTP2Flag.endHeaders) {
            try completeHeaderBlock(frame.streamID, endStream: endStream, selfDependent: selfDependent, block: fragment, events: &events, output: &output)
        } else {
            guard fragment.readableBytes <= limits.maximumHeaderBlockSize else {
                throw HTTP2ConnectionError(.enhanceYourCalm, "header block larger than \(limits.maximumHeaderBlockSize) bytes")
            }
            // A buffer of its own: CONTINUATION frames append to it in place.
            var block = ByteBufferAllocator().buffer(capacity: max(fragment.readableBytes * 2, 1024))
            block.writeImmutableBuffer(fragment)
            headerBlock = PendingHeaderBlock(streamID: frame.streamID, endStream: endStream, selfDependent: selfDependent, block: block, startedAt: now)
        }
    }

    private mutating func receiveContinuation(_ frame: HTTP2WireFrame, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        guard var pending = headerBlock else {
            throw HTTP2ConnectionError(.protocolError, "CONTINUATION without HEADERS")
        }
        headerBlock = nil  // own the block while appending, so it is not copied
        pending.continuations += 1
        guard pending.continuations <= limits.maximumContinuationFrames else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.maximumContinuationFrames) CONTINUATION frames in one header block")
        }
        guard pending.block.readableBytes + frame.payload.readableBytes <= limits.maximumHeaderBlockSize else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "header block larger than \(limits.maximumHeaderBlockSize) bytes")
        }
        pending.block.writeImmutableBuffer(frame.payload)
        if frame.has(HTTP2Flag.endHeaders) {
            try completeHeaderBlock(
                pending.streamID, endStream: pending.endStream, selfDependent: pending.selfDependent, block: pending.block, events: &events, output: &output
            )
        } else {
            headerBlock = pending
        }
    }

    private mutating func completeHeaderBlock(
        _ id: HTTP2StreamNumber, endStream: Bool, selfDependent: Bool, block: ByteBuffer, events: inout [Event], output: inout ByteBuffer
    ) throws(HTTP2ConnectionError) {
        // Every block is decoded, even one that is then refused, to keep the tables in step (RFC 7541 §2.2).
        let headers = try decode(block)
        switch place(of: id) {
        case .open:
            try continueStream(id, headers: headers, endStream: endStream, selfDependent: selfDependent, events: &events, output: &output)
        case .idle:
            guard role == .server, isPeerInitiated(id) else {
                throw HTTP2ConnectionError(.protocolError, "HEADERS on stream \(id), which the client may not open")
            }
            try openPeerStream(id, headers: headers, endStream: endStream, selfDependent: selfDependent, events: &events, output: &output)
        case .closed(resetHere: true):
            return
        case .closed(resetHere: false):
            if role == .server && isPeerInitiated(id) {
                throw HTTP2ConnectionError(.protocolError, "HEADERS on stream \(id), not above the last stream the client opened (\(highestPeerStreamID))")
            }
            throw HTTP2ConnectionError(.streamClosed, "HEADERS on closed stream \(id)")
        }
    }

    /// A request opens a stream on a server (§5.1.1, §5.1.2, §8.3.1).
    private mutating func openPeerStream(
        _ id: HTTP2StreamNumber, headers: HPACKHeaders, endStream: Bool, selfDependent: Bool, events: inout [Event], output: inout ByteBuffer
    ) throws(HTTP2ConnectionError) {
        highestPeerStreamID = id
        if let last = goAwaySent, id > last {
            recentlyReset.insert(id)  // after GOAWAY: not processed, its frames ignored
            return
        }
        if selfDependent { return try streamError(id, .protocolError, events: &events, output: &output) }
        if peerStreamCount >= localInForce.maxConcurrentStreams {
            return try streamError(id, .refusedStream, events: &events, output: &output)
        }
        let head: HTTP2MessageValidation.Head
        switch HTTP2MessageValidation.validate(headers, as: .request) {
        case .success(let valid): head = valid
        case .failure: return try streamError(id, .protocolError, events: &events, output: &output)
        }
        if endStream, let expected = head.contentLength, expected != 0 {
            return try streamError(id, .protocolError, events: &events, output: &output)
        }
        var stream = HTTP2Stream(inbound: .body, sendWindow: remote.initialWindowSize, receiveWindow: localInForce.initialWindowSize)
        stream.remoteClosed = endStream
        stream.expectedLength = head.contentLength
        streams[id] = stream
        peerStreamCount += 1
        // Counted here, not when the event is handled: a later frame of the same read (a SETTINGS
        // ACK) may change the limit in force before then.
        peakPeerStreamsUnderCurrentLimit = max(peakPeerStreamsUnderCurrentLimit, peerStreamCount)
        events.append(.headers(streamID: id, headers: headers, endStream: endStream))
    }

    /// A later header block on an open stream: a client's response head (after any 1xx), or trailers.
    private mutating func continueStream(
        _ id: HTTP2StreamNumber, headers: HPACKHeaders, endStream: Bool, selfDependent: Bool, events: inout [Event], output: inout ByteBuffer
    ) throws(HTTP2ConnectionError) {
        var stream = streams[id]!
        if selfDependent { return try streamError(id, .protocolError, events: &events, output: &output) }
        if stream.remoteClosed { return try streamError(id, .streamClosed, events: &events, output: &output) }
        if stream.inbound == .awaitingResponse {
            let head: HTTP2MessageValidation.Head
            switch HTTP2MessageValidation.validate(headers, as: .response) {
            case .success(let valid): head = valid
            case .failure: return try streamError(id, .protocolError, events: &events, output: &output)
            }
            if head.informational {
                // 1xx: the final response is still to come, and may not end the stream (§8.1).
                if endStream { return try streamError(id, .protocolError, events: &events, output: &output) }
                return
            }
            if endStream, let expected = head.contentLength, expected != 0 {
                return try streamError(id, .protocolError, events: &events, output: &output)
            }
            stream.inbound = .body
            stream.expectedLength = head.contentLength
            stream.remoteClosed = endStream
            streams[id] = stream
            events.append(.headers(streamID: id, headers: headers, endStream: endStream))
        } else {
            // Trailers end the message (§8.1): without END_STREAM they are a second head.
            guard endStream, case .success = HTTP2MessageValidation.validate(headers, as: .trailers) else {
                return try streamError(id, .protocolError, events: &events, output: &output)
            }
            if let expected = stream.expectedLength, expected != stream.receivedLength {
                return try streamError(id, .protocolError, events: &events, output: &output)
            }
            stream.remoteClosed = true
            streams[id] = stream
            events.append(.trailers(streamID: id, headers: headers))
        }
        if stream.remoteClosed { remoteEnded(id, output: &output) }
    }

    private mutating func receivePriority(_ frame: HTTP2WireFrame, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        try requireStream(frame)
        var payload = frame.payload
        guard payload.readableBytes == 5 else { throw HTTP2ConnectionError(.frameSizeError, "PRIORITY must be 5 bytes") }
        try countControlFrame()
        let dependency = payload.readInteger(as: UInt32.self)! & 0x7FFF_FFFF
        guard dependency == frame.streamID else { return }  // priorities are otherwise ignored (RFC 9113 §5.3.2)
        if case .open = place(of: frame.streamID) {
            try streamError(frame.streamID, .protocolError, events: &events, output: &output)
        } else {
            throw HTTP2ConnectionError(.protocolError, "stream \(frame.streamID) depends on itself")
        }
    }

    private mutating func receiveReset(_ frame: HTTP2WireFrame, events: inout [Event]) throws(HTTP2ConnectionError) {
        try requireStream(frame)
        var payload = frame.payload
        guard let code = payload.readInteger(as: UInt32.self), payload.readableBytes == 0 else {
            throw HTTP2ConnectionError(.frameSizeError, "RST_STREAM must be 4 bytes")
        }
        let id = frame.streamID
        switch place(of: id) {
        case .idle:
            throw HTTP2ConnectionError(.protocolError, "RST_STREAM on idle stream \(id)")
        case .closed:
            return
        case .open:
            if role == .server, isPeerInitiated(id), !streams[id]!.localClosed, !peerResets.record(now: now) {
                throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.peerResets) streams reset by the client before their answer")
            }
            forget(id)
            events.append(.streamReset(streamID: id, code: HTTP2ErrorCode(code), byPeer: true))
        }
    }

    private mutating func receiveSettings(_ frame: HTTP2WireFrame, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "SETTINGS on a stream") }
        var payload = frame.payload
        if frame.has(HTTP2Flag.ack) {
            guard payload.readableBytes == 0 else { throw HTTP2ConnectionError(.frameSizeError, "SETTINGS ACK with a payload") }
            if !pendingLocalSettings.isEmpty { localAcknowledged(pendingLocalSettings.removeFirst()) }
            events.append(.settingsAcknowledged)
            return
        }
        guard payload.readableBytes % 6 == 0 else { throw HTTP2ConnectionError(.frameSizeError, "SETTINGS length not a multiple of 6") }
        if sawSettings { try countControlFrame() }
        let before = remote.initialWindowSize
        while let id = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
            try apply(id: id, value: Int(value))
        }
        try writeControlFrame(&output) { $0.writeHTTP2SettingsAck() }
        let first = !sawSettings
        sawSettings = true
        if remote.initialWindowSize != before {
            try initialWindowChanged(by: remote.initialWindowSize - before, output: &output)
        }
        events.append(.settings(first: first, maxConcurrentStreams: remote.maxConcurrentStreams))
    }

    private mutating func apply(id: UInt16, value: Int) throws(HTTP2ConnectionError) {
        switch HTTP2SettingID(rawValue: id) {
        case .headerTableSize:
            remote.headerTableSize = value
            encoder.peerAllowsTableSize(value)
        case .enablePush:
            // A server may not offer push to a client (RFC 9113 §6.5.2).
            guard value <= 1, !(role == .client && value == 1) else {
                throw HTTP2ConnectionError(.protocolError, "SETTINGS_ENABLE_PUSH \(value) is not allowed here")
            }
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

    /// This side's SETTINGS took effect: a lower stream limit now refuses streams; a new initial
    /// window applies to every open stream.
    private mutating func localAcknowledged(_ settings: Settings) {
        let delta = settings.initialWindowSize - localInForce.initialWindowSize
        if settings.maxConcurrentStreams != localInForce.maxConcurrentStreams {
            peakPeerStreamsUnderEarlierLimits = peakPeerStreamsByLimit
            peakPeerStreamsUnderCurrentLimit = peakPeerStreamsUnderEarlierLimits[settings.maxConcurrentStreams] ?? 0
            peakPeerStreamsUnderEarlierLimits[settings.maxConcurrentStreams] = nil
            streamLimitChanged = true
        }
        localInForce = settings
        if delta != 0 {
            for id in streams.keys { streams[id]!.receiveWindow += delta }
        }
    }

    private mutating func receivePing(_ frame: HTTP2WireFrame, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "PING on a stream") }
        var payload = frame.payload
        guard let data = payload.readInteger(as: UInt64.self), payload.readableBytes == 0 else {
            throw HTTP2ConnectionError(.frameSizeError, "PING must be 8 bytes")
        }
        if frame.has(HTTP2Flag.ack) {
            events.append(.pingAck(data))
        } else {
            try countControlFrame()
            try writeControlFrame(&output) { $0.writeHTTP2Ping(data, ack: true) }
        }
    }

    private mutating func receiveGoAway(_ frame: HTTP2WireFrame, events: inout [Event]) throws(HTTP2ConnectionError) {
        guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "GOAWAY on a stream") }
        var payload = frame.payload
        guard let last = payload.readInteger(as: UInt32.self), let code = payload.readInteger(as: UInt32.self) else {
            throw HTTP2ConnectionError(.frameSizeError, "GOAWAY too short")
        }
        let lastStreamID = last & 0x7FFF_FFFF
        goAwayReceived = min(lastStreamID, goAwayReceived ?? lastStreamID)
        // Streams this side opened above the last one were not processed: they are gone (§6.8).
        for id in streams.keys where !isPeerInitiated(id) && id > lastStreamID {
            forget(id)
            recentlyReset.insert(id)
        }
        events.append(.goAway(lastStreamID: lastStreamID, code: HTTP2ErrorCode(code), debugData: payload))
    }

    private mutating func receiveWindowUpdate(_ frame: HTTP2WireFrame, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        var payload = frame.payload
        guard let raw = payload.readInteger(as: UInt32.self), payload.readableBytes == 0 else {
            throw HTTP2ConnectionError(.frameSizeError, "WINDOW_UPDATE must be 4 bytes")
        }
        let increment = Int(raw & 0x7FFF_FFFF)
        let id = frame.streamID
        if id == 0 {
            guard increment > 0 else { throw HTTP2ConnectionError(.protocolError, "WINDOW_UPDATE of 0 on the connection") }
            guard connectionSendWindow + increment <= http2MaximumWindow else {
                throw HTTP2ConnectionError(.flowControlError, "connection window beyond 2^31-1")
            }
            connectionSendWindow += increment
            sendWaitingBodies(output: &output)
            return
        }
        switch place(of: id) {
        case .idle:
            throw HTTP2ConnectionError(.protocolError, "WINDOW_UPDATE on idle stream \(id)")
        case .closed:
            return  // may cross the frame that closed it (§6.9)
        case .open:
            break
        }
        guard increment > 0 else { return try streamError(id, .protocolError, events: &events, output: &output) }
        guard streams[id]!.sendWindow + increment <= http2MaximumWindow else {
            return try streamError(id, .flowControlError, events: &events, output: &output)
        }
        streams[id]!.sendWindow += increment
        sendPendingBody(id, output: &output)
    }

    // MARK: Stream life

    /// The peer ended its side of an open stream.
    private mutating func remoteEnded(_ id: HTTP2StreamNumber, output: inout ByteBuffer) {
        guard let stream = streams[id] else { return }
        if stream.isClosed {
            forget(id)
        } else if role == .client, stream.pending != nil {
            // A complete response before the whole request was sent: stop sending it (§8.1).
            resetStream(id, code: .noError, into: &output)
        }
    }

    /// Ends stream `id` with a stream error of `code` (§5.4.2): RST_STREAM, and the stream is gone.
    mutating func streamError(_ id: HTTP2StreamNumber, _ code: HTTP2ErrorCode, events: inout [Event], output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        guard streamErrors.record(now: now) else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.streamErrors) stream errors")
        }
        try writeControlFrame(&output) { $0.writeHTTP2RstStream(streamID: id, code: code) }
        forget(id)
        recentlyReset.insert(id)
        events.append(.streamReset(streamID: id, code: code, byPeer: false))
    }

    /// Drops a stream from the table, with any body still waiting on it.
    mutating func forget(_ id: HTTP2StreamNumber) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        pendingBodyBytes -= stream.pending?.readableBytes ?? 0
        if isPeerInitiated(id) { peerStreamCount -= 1 }
    }

    private mutating func countControlFrame() throws(HTTP2ConnectionError) {
        guard controlFrames.record(now: now) else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.controlFrames) control frames")
        }
    }

    /// Writes a frame the peer's frame calls for, within ``Limits/maximumQueuedControlFrames``.
    private mutating func writeControlFrame(_ output: inout ByteBuffer, _ write: (inout ByteBuffer) -> Void) throws(HTTP2ConnectionError) {
        queuedControlFrames += 1
        guard queuedControlFrames <= limits.maximumQueuedControlFrames else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.maximumQueuedControlFrames) answers queued for a peer that does not read")
        }
        write(&output)
    }

    private mutating func decode(_ block: ByteBuffer) throws(HTTP2ConnectionError) -> HPACKHeaders {
        var block = block
        do {
            return try decoder.decodeHeaders(from: &block)
        } catch is NIOHPACKErrors.MaxHeaderListSizeViolation {
            throw HTTP2ConnectionError(.enhanceYourCalm, "header list larger than \(decoder.maxHeaderListSize) bytes")
        } catch {
            throw HTTP2ConnectionError(.compressionError, "header block could not be decoded: \(error)")
        }
    }
}
