import NIOCore

// What one side writes: header blocks, bodies within the peer's flow-control windows (RFC 9113
// §6.9), resets, GOAWAY, PING and changes to its own settings. Each keeps the stream table in step.
extension HTTP2Connection {
    /// Writes a header block on `streamID`: on a client a new stream's request (stream IDs rising,
    /// odd), on a server the response to an open request. `encode` writes the fields with
    /// ``encoder``; the block is split into CONTINUATION frames when it is larger than the peer's
    /// SETTINGS_MAX_FRAME_SIZE.
    ///
    /// - Returns: false, writing nothing, when the stream cannot take it (closed, reset, or a new
    ///   stream after GOAWAY or not above the last one).
    @discardableResult
    package mutating func writeHeaders(
        streamID: HTTP2StreamNumber, endStream: Bool, into output: inout ByteBuffer,
        _ encode: (inout HPACKBlockEncoder, inout ByteBuffer) -> Void
    ) -> Bool {
        if role == .client, streams[streamID] == nil {
            guard streamID > highestLocalStreamID, !isPeerInitiated(streamID), goAwayReceived == nil else { return false }
            highestLocalStreamID = streamID
            streams[streamID] = HTTP2Stream(inbound: .awaitingResponse, sendWindow: remote.initialWindowSize, receiveWindow: localInForce.initialWindowSize)
        }
        guard let stream = streams[streamID], !stream.localClosed else { return false }
        // Write the frame header with a placeholder length, encode the block in place, then patch
        // the length: no intermediate buffer.
        let frameStart = output.writerIndex
        output.writeHTTP2FrameHeader(length: 0, type: .headers, flags: HTTP2Flag.endHeaders | (endStream ? HTTP2Flag.endStream : 0), streamID: streamID)
        let blockStart = output.writerIndex
        encoder.beginBlock(into: &output)
        encode(&encoder, &output)
        let blockLength = output.writerIndex - blockStart
        if blockLength <= remote.maxFrameSize {
            output.setInteger(UInt8(truncatingIfNeeded: blockLength >> 16), at: frameStart)
            output.setInteger(UInt16(truncatingIfNeeded: blockLength), at: frameStart + 1)
        } else {
            // Rare: split into HEADERS and CONTINUATION frames.
            var block = ByteBufferAllocator().buffer(capacity: blockLength)
            block.writeImmutableBuffer(output.getSlice(at: blockStart, length: blockLength)!)
            output.moveWriterIndex(to: frameStart)
            output.writeHTTP2Headers(streamID: streamID, block: block, endStream: endStream, maximumFrameSize: remote.maxFrameSize)
        }
        if endStream { localEnded(streamID) }
        return true
    }

    /// Sends `body` on `streamID` as DATA within the stream's and the connection's windows, ending
    /// the stream with its last frame. What does not fit waits for WINDOW_UPDATE or a larger
    /// initial window; other streams' bodies are not held back by it.
    ///
    /// Specialised for `[UInt8]`, the bodies of the client and the mocks: a generic `package`
    /// function is not specialised in the modules that call it, and its generic copy cost 5 % of
    /// the client's event loop.
    @discardableResult
    @_specialize(where Body == [UInt8])
    package mutating func writeBody<Body: Collection<UInt8>>(streamID: HTTP2StreamNumber, _ body: Body, into output: inout ByteBuffer) -> Bool {
        guard var stream = streams[streamID], !stream.localClosed, stream.pending == nil else { return false }
        let count = body.count
        if count <= stream.sendWindow, count <= connectionSendWindow, count <= remote.maxFrameSize {
            output.writeHTTP2Data(streamID: streamID, bytes: body, endStream: true)
            connectionSendWindow -= count
            stream.sendWindow -= count
            streams[streamID] = stream
            localEnded(streamID)
        } else {
            stream.pending = ByteBuffer(bytes: body)
            pendingBodyBytes += count
            streams[streamID] = stream
            sendPendingBody(streamID, output: &output)
        }
        return true
    }

    /// Whether `streamID` has body bytes waiting for window.
    package func hasPendingBody(_ streamID: HTTP2StreamNumber) -> Bool {
        streams[streamID]?.pending != nil
    }

    /// Resets `streamID` with `code` (§6.4) if it is open: its waiting body is dropped, and the
    /// frames the peer sent before seeing the reset are ignored.
    package mutating func resetStream(_ streamID: HTTP2StreamNumber, code: HTTP2ErrorCode, into output: inout ByteBuffer) {
        guard streams[streamID] != nil else { return }
        output.writeHTTP2RstStream(streamID: streamID, code: code)
        forget(streamID)
        recentlyReset.insert(streamID)
    }

    /// Writes GOAWAY (§6.8). On a server, streams the client opens later are not processed, and
    /// open ones above `lastStreamID` are dropped unanswered (the client may send them again).
    ///
    /// - Parameter lastStreamID: the last peer stream that was or will be processed; by default
    ///   the highest one opened.
    package mutating func writeGoAway(
        lastStreamID: HTTP2StreamNumber? = nil, code: HTTP2ErrorCode, debugData: [UInt8] = [], into output: inout ByteBuffer
    ) {
        let last = min(lastStreamID ?? highestPeerStreamID, goAwaySent ?? .max)
        goAwaySent = last
        for id in streams.keys where isPeerInitiated(id) && id > last {
            forget(id)
            recentlyReset.insert(id)
        }
        output.writeHTTP2GoAway(lastStreamID: last, code: code, debugData: debugData)
    }

    /// GOAWAY for a connection error: its code, and its message as debug data (at most 256 bytes).
    package mutating func writeGoAway(for error: HTTP2ConnectionError, into output: inout ByteBuffer) {
        writeGoAway(code: error.code, debugData: Array(error.message.utf8.prefix(256)), into: &output)
    }

    /// Writes new settings of this side's; they bind once the peer acknowledges them (§6.5.3).
    package mutating func changeSettings(_ changes: [(HTTP2SettingID, Int)], into output: inout ByteBuffer) {
        for (id, value) in changes {
            switch id {
            case .headerTableSize: local.headerTableSize = value
            case .enablePush: local.enablePush = value
            case .maxConcurrentStreams: local.maxConcurrentStreams = value
            case .initialWindowSize: local.initialWindowSize = value
            case .maxFrameSize: local.maxFrameSize = value
            case .maxHeaderListSize: local.maxHeaderListSize = value
            }
        }
        pendingLocalSettings.append(local)
        output.writeHTTP2Settings(changes)
    }

    // MARK: Flow control

    /// This side ended its half of `id`.
    mutating func localEnded(_ id: HTTP2StreamNumber) {
        guard var stream = streams[id] else { return }
        stream.localClosed = true
        pendingBodyBytes -= stream.pending?.readableBytes ?? 0
        stream.pending = nil
        if stream.isClosed {
            forget(id)
        } else {
            streams[id] = stream
        }
    }

    /// Sends as much of `id`'s waiting body as its window and the connection's allow, a frame at a
    /// time; queues the stream for the connection window if that is what holds it.
    mutating func sendPendingBody(_ id: HTTP2StreamNumber, output: inout ByteBuffer) {
        guard var stream = streams[id], var pending = stream.pending, !stream.waitingForConnectionWindow else { return }
        stream.pending = nil  // own the bytes while slicing them
        while true {
            let remaining = pending.readableBytes
            let allowed = min(stream.sendWindow, connectionSendWindow, remote.maxFrameSize)
            guard allowed > 0 || remaining == 0 else { break }
            let count = min(allowed, remaining)
            let chunk = pending.readSlice(length: count)!
            output.writeHTTP2Data(streamID: id, bytes: chunk.readableBytesView, endStream: count == remaining)
            connectionSendWindow -= count
            stream.sendWindow -= count
            pendingBodyBytes -= count
            if count == remaining {
                streams[id] = stream
                localEnded(id)
                return
            }
        }
        stream.pending = pending
        if stream.sendWindow > 0 {
            // Out of connection window, not its own: wait in line for WINDOW_UPDATE on stream 0.
            stream.waitingForConnectionWindow = true
            waitingForConnectionWindow.append(id)
        }
        streams[id] = stream
    }

    /// The connection window grew: the streams waiting for it go on, oldest first.
    mutating func sendWaitingBodies(output: inout ByteBuffer) {
        while connectionSendWindow > 0, let id = waitingForConnectionWindow.popFirst() {
            guard streams[id] != nil else { continue }  // reset or closed meanwhile
            streams[id]!.waitingForConnectionWindow = false
            sendPendingBody(id, output: &output)
        }
    }

    /// SETTINGS_INITIAL_WINDOW_SIZE changed by `delta`: every open stream's send window moves with it (§6.9.2).
    mutating func initialWindowChanged(by delta: Int, output: inout ByteBuffer) throws(HTTP2ConnectionError) {
        for id in streams.keys {
            streams[id]!.sendWindow += delta
            guard streams[id]!.sendWindow <= http2MaximumWindow else {
                throw HTTP2ConnectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE takes stream \(id)'s window beyond 2^31-1")
            }
        }
        guard delta > 0 else { return }
        for id in streams.keys where streams[id]!.pending != nil {
            sendPendingBody(id, output: &output)
        }
    }
}
