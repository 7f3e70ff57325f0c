import NIOCore

/// One stream that is open or half closed, as the connection sees it (RFC 9113 §5.1): which
/// directions have ended, both flow-control windows, the body waiting for window, and where the
/// peer's message stands.
struct HTTP2Stream {
    /// What the peer may send next on the stream.
    enum Inbound: Equatable {
        /// A client's stream before the final response (1xx responses may come first).
        case awaitingResponse
        /// After the request or response head: DATA, then optional trailers.
        case body
    }

    var inbound: Inbound
    /// This side sent END_STREAM (or will, with the last byte of `pending`).
    var localClosed = false
    /// The peer sent END_STREAM.
    var remoteClosed = false
    /// Bytes of DATA this side may still send (the peer's window for the stream).
    var sendWindow: Int
    /// Bytes of DATA the peer may still send before this side updates the window.
    var receiveWindow: Int
    /// Body bytes waiting for window; END_STREAM goes with the last of them.
    var pending: ByteBuffer?
    /// Queued to send once the connection window opens.
    var waitingForConnectionWindow = false
    /// The peer's `content-length`, checked against its DATA (RFC 9113 §8.1.1).
    var expectedLength: Int?
    var receivedLength = 0

    var isClosed: Bool { localClosed && remoteClosed }
}
