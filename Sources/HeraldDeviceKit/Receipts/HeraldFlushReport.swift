import Foundation

/// What one ``HeraldReceipts/flush()`` did.
public struct HeraldFlushReport: Sendable, Hashable {
    /// Events the gateway took.
    public var taken = 0
    /// Events dropped for good: refused by the gateway (400, 403, or listed in a 202's
    /// `refused`), or alone and still too large (413).
    public var dropped = 0
    /// Events still in the queue afterwards.
    public var pending = 0
    /// Requests sent.
    public var requests = 0
    /// Set when a send failed or the queue is backing off: a flush before it sends nothing.
    public var retryAt: Date?
    /// Whether another flush (in this process or in the app's extension) was sending, so this
    /// one left the queue to it.
    public var flushingElsewhere = false

    /// A report of nothing done.
    public init() {}
}
