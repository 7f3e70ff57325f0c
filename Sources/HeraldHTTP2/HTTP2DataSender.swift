import NIOCore

/// Writes request or response bodies as DATA frames within the peer's flow-control windows
/// (RFC 9113 §6.9): a body that fits goes out at once; the rest waits for WINDOW_UPDATE or a
/// larger initial window. Waiting bodies share the connection window oldest first, and a stream
/// out of window never holds back the others: each stream's window is its own. APNs bodies are
/// small, so waiting is rare.
package struct HTTP2DataSender {
    private struct Waiting {
        var streamID: HTTP2StreamNumber
        var bytes: ByteBuffer
        var window: Int
    }

    private var waiting: [Waiting] = []

    package init() {}

    /// Sends `body` on a newly opened stream (ending it), or queues what does not fit.
    package mutating func send(
        streamID: HTTP2StreamNumber, body: some Collection<UInt8>, connection: inout HTTP2Connection, output: inout ByteBuffer
    ) {
        let window = connection.remote.initialWindowSize
        if waiting.isEmpty, body.count <= window, body.count <= connection.connectionSendWindow, body.count <= connection.remote.maxFrameSize {
            output.writeHTTP2Data(streamID: streamID, bytes: body, endStream: true)
            connection.consumeSendWindow(body.count)
        } else {
            waiting.append(Waiting(streamID: streamID, bytes: ByteBuffer(bytes: body), window: window))
            sendWaiting(connection: &connection, output: &output)
        }
    }

    /// Handles the window events of ``HTTP2Connection``: a stream's WINDOW_UPDATE, the
    /// connection's, or a new SETTINGS_INITIAL_WINDOW_SIZE (`delta` for every open stream).
    package mutating func windowGrew(
        streamID: HTTP2StreamNumber? = nil, increment: Int = 0, initialWindowDelta: Int = 0,
        connection: inout HTTP2Connection, output: inout ByteBuffer
    ) {
        if initialWindowDelta != 0 {
            for index in waiting.indices { waiting[index].window += initialWindowDelta }
        }
        if let streamID, let index = waiting.firstIndex(where: { $0.streamID == streamID }) {
            waiting[index].window += increment
        }
        sendWaiting(connection: &connection, output: &output)
    }

    /// Forgets a stream's waiting body (it was reset or answered). Returns whether there was one.
    @discardableResult
    package mutating func drop(_ streamID: HTTP2StreamNumber) -> Bool {
        guard let index = waiting.firstIndex(where: { $0.streamID == streamID }) else { return false }
        waiting.remove(at: index)
        return true
    }

    /// Forgets every waiting body (the connection closed).
    package mutating func removeAll() {
        waiting = []
    }

    private mutating func sendWaiting(connection: inout HTTP2Connection, output: inout ByteBuffer) {
        var index = 0
        while index < waiting.count {
            // Frames while this stream's window, the connection's and the frame size allow.
            while true {
                let remaining = waiting[index].bytes.readableBytes
                let allowed = min(waiting[index].window, connection.connectionSendWindow, connection.remote.maxFrameSize)
                guard allowed > 0 || remaining == 0 else { break }
                let count = min(allowed, remaining)
                let chunk = waiting[index].bytes.readSlice(length: count)!
                let last = count == remaining
                output.writeHTTP2Data(streamID: waiting[index].streamID, bytes: chunk.readableBytesView, endStream: last)
                connection.consumeSendWindow(count)
                waiting[index].window -= count
                if last { break }
            }
            if waiting[index].bytes.readableBytes == 0 {
                waiting.remove(at: index)
            } else if connection.connectionSendWindow <= 0 {
                return  // the rest wait for the connection's WINDOW_UPDATE
            } else {
                index += 1  // out of its own window: the next may still send
            }
        }
    }
}
