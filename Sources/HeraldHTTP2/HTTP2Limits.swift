import NIOCore

/// At most `maximumCount` events within any `window` of time.
package struct HTTP2RateLimit: Sendable, Hashable, CustomStringConvertible {
    package var maximumCount: Int
    package var window: TimeAmount

    package init(_ maximumCount: Int, per window: TimeAmount) {
        self.maximumCount = maximumCount
        self.window = window
    }

    package var description: String { "\(maximumCount) per \(window.shortDescription)" }
}

extension HTTP2Connection {
    /// What a peer can make one side of a connection hold, or do for it (RFC 9113 §10.5). Every
    /// buffer and table the peer can grow has a bound here or in ``Settings``; going past one ends
    /// the connection with `ENHANCE_YOUR_CALM`. The defaults follow swift-nio-http2's.
    package struct Limits: Sendable, Hashable {
        /// The largest header block, compressed, over HEADERS and its CONTINUATION frames.
        package var maximumHeaderBlockSize = 64 << 10
        /// CONTINUATION frames in one header block (a block of 64 KiB needs 3 at the minimum frame size).
        package var maximumContinuationFrames = 16
        /// How long a header block may stay open: nothing else can happen on the connection
        /// meanwhile. Checked by ``HTTP2Connection/checkTimeouts(now:)``.
        package var headerBlockTimeout: TimeAmount = .seconds(5)
        /// RST_STREAM frames that cancel streams the peer opened before this side finished
        /// answering them (the "rapid reset" attack, CVE-2023-44487). Counted on servers.
        package var peerResets = HTTP2RateLimit(200, per: .seconds(30))
        /// PING, SETTINGS and PRIORITY frames, frames of unknown types, and empty DATA frames that
        /// do not end their stream: frames that cost work and carry nothing.
        package var controlFrames = HTTP2RateLimit(200, per: .seconds(30))
        /// Stream errors this side raises because of what the peer sent (malformed messages,
        /// streams over the concurrency limit, ...): each costs a decode and a RST_STREAM.
        package var streamErrors = HTTP2RateLimit(200, per: .seconds(30))
        /// Streams this side reset whose late frames are still ignored (RFC 9113 §5.1, "closed").
        package var recentlyResetStreams = 2048
        /// Frames this side writes in answer to the peer (ACKs, RST_STREAM) while the peer is not
        /// reading them: the owner says so with `outputWritable: false`.
        package var maximumQueuedControlFrames = 10_000

        package init() {}
    }
}

/// Counts events in a sliding window: the times of the latest `maximumCount` events, in a ring.
struct HTTP2EventCounter {
    let limit: HTTP2RateLimit
    private var times: [NIODeadline] = []
    private var oldest = 0

    init(_ limit: HTTP2RateLimit) {
        self.limit = limit
    }

    /// Records an event at `now`. Returns false when it is one more than the limit allows.
    mutating func record(now: NIODeadline) -> Bool {
        guard limit.maximumCount > 0 else { return false }
        if times.count < limit.maximumCount {
            times.append(now)
            return true
        }
        let previous = times[oldest]
        times[oldest] = now
        oldest = (oldest + 1) % limit.maximumCount
        return now - previous > limit.window
    }
}

/// Streams this side reset, remembered so their late frames are ignored rather than taken for
/// errors; the oldest are forgotten first.
struct HTTP2RecentStreams {
    private var members: Set<HTTP2StreamNumber> = []
    private var order = CircularBuffer<HTTP2StreamNumber>(initialCapacity: 16)
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    mutating func insert(_ id: HTTP2StreamNumber) {
        guard capacity > 0, members.insert(id).inserted else { return }
        order.append(id)
        if order.count > capacity { members.remove(order.removeFirst()) }
    }

    func contains(_ id: HTTP2StreamNumber) -> Bool {
        members.contains(id)
    }

    var count: Int { order.count }
}

extension TimeAmount {
    /// `5 s` or `300 ms`, for messages.
    package var shortDescription: String {
        let milliseconds = nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }
}
