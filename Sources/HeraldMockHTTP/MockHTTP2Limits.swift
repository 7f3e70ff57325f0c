import NIOCore
import Synchronization

/// What one peer can make a mock's HTTP/2 connection (``MockHTTP2Handler``) hold or do. Past a
/// bound the mock refuses the stream (REFUSED_STREAM), answers early, stops reading, or ends
/// the connection with GOAWAY; it never grows without limit.
///
/// With the defaults a connection holds at most about 1.5 MiB for its peer: the bodies of its
/// requests (``maximumBufferedBodyBytes``), answers the peer has not read
/// (``maximumQueuedResponseBytes``, then the mock stops reading), one header block being gathered
/// (HeraldHTTP2's 64 KiB) and TLS buffers.
package struct MockHTTP2Limits: Sendable {
    /// Streams open at once (SETTINGS_MAX_CONCURRENT_STREAMS); one over it is refused. Default
    /// 100, what Google's and Hummingbird's servers advertise.
    package var maximumConcurrentStreams = 100
    /// The decoded header list a request may have (SETTINGS_MAX_HEADER_LIST_SIZE). Default 16 KiB.
    package var maximumHeaderListSize = 16 << 10
    /// Bytes of request bodies held at once over the connection's streams; a stream that would
    /// pass it is refused with REFUSED_STREAM (the peer may send it again). Default 1 MiB.
    package var maximumBufferedBodyBytes = 1 << 20
    /// Bytes of answers written and not yet read by the peer: past it the mock stops reading
    /// from it, and refuses new streams until it catches up. Default 256 KiB.
    package var maximumQueuedResponseBytes = 256 << 10
    /// Time from accepting a connection to the peer's first SETTINGS (TLS and the HTTP/2
    /// preface included). Default 10 s.
    package var handshakeTimeout: TimeAmount = .seconds(10)
    /// A connection with no open stream for this long is closed with GOAWAY. Default 5 minutes.
    package var idleTimeout: TimeAmount = .minutes(5)
    /// A request must arrive whole, from HEADERS to END_STREAM, within this; otherwise its
    /// stream is reset with CANCEL. Default 30 s.
    package var requestTimeout: TimeAmount = .seconds(30)
    /// SO_SNDBUF for each HTTP/2 connection, the answers the kernel holds for a peer that does
    /// not read; `nil` (the default) leaves the system's.
    package var socketSendBufferSize: Int?

    package init() {}
}

/// What a mock's HTTP/2 connections have seen, over all of them: for tests and benchmarks.
package final class MockHTTP2Counters: Sendable {
    /// Requests (streams opened by peers), whatever became of them.
    package let requests = Atomic(0)
    /// Streams refused with REFUSED_STREAM (over a bound; the peer may send them again).
    package let refusedStreams = Atomic(0)

    package init() {}
}
