import Foundation

/// The durable queue of events not yet reported: a JSON file in a directory the app chooses.
///
/// Give the app and its Notification Service Extension the same directory (an App Group
/// container) and they share the queue: each change takes a file lock, so both may append at the
/// same moment and nothing is lost. The queue holds one event per (receipt, event, action), at
/// most ``Limits/maximumEvents`` of them (the earliest recorded go first), none older than
/// ``Limits/maximumAge``.
public final class HeraldReceiptQueue: Sendable {
    /// How much the queue keeps.
    public struct Limits: Sendable, Hashable {
        /// The most events kept; appending past it drops the oldest. Default 1,000.
        public var maximumEvents: Int
        /// The age past which an event is dropped unsent. Default 7 days.
        public var maximumAge: Duration

        /// Limits of `maximumEvents` (at least 1) events of at most `maximumAge`.
        public init(maximumEvents: Int = 1_000, maximumAge: Duration = .seconds(7 * 86_400)) {
            self.maximumEvents = max(1, maximumEvents)
            self.maximumAge = maximumAge
        }

        /// 1,000 events, 7 days.
        public static let standard = Limits()
    }

    /// The directory holding the queue's files (`herald-receipts.json` and its lock).
    public let directory: URL
    /// How much the queue keeps.
    public let limits: Limits

    private let file: SharedFile<ReceiptQueueDocument>
    private let now: @Sendable () -> Date

    /// The queue in `directory` (made when first written to), keeping at most `limits`.
    ///
    /// - Parameter now: the clock ages are measured by; tests move it.
    public init(directory: URL, limits: Limits = .standard, now: @escaping @Sendable () -> Date = { Date() }) {
        self.directory = directory
        self.limits = limits
        self.file = SharedFile(directory: directory, name: "herald-receipts")
        self.now = now
    }

    /// Adds `event` unless the queue already holds the same (receipt, event, action) or it is
    /// older than ``Limits/maximumAge``. Returns whether it was added.
    ///
    /// Throws ``HeraldDeviceError/Code/invalidAction`` for a clicked action's identifier that is
    /// empty or over 64 bytes, and ``HeraldDeviceError/Code/storage`` when the file cannot be written.
    @discardableResult
    public func append(_ event: HeraldEvent) throws(HeraldDeviceError) -> Bool {
        guard event.kind.isValid else {
            throw HeraldDeviceError(.invalidAction, detail: "an action identifier is 1 to \(HeraldEvent.Kind.maximumActionLength) bytes")
        }
        let limits = limits
        return try update { state, now in
            guard !state.events.contains(where: { $0.key == event.key }) else { return false }
            state.events.append(StoredEvent(event))
            // An event older than the age limit goes at once: then it was not added.
            state.evict(limits: limits, now: now)
            return state.events.contains { $0.key == event.key }
        }
    }

    /// The events waiting to be reported, oldest first.
    public func pending() throws(HeraldDeviceError) -> [HeraldEvent] {
        try update { state, _ in state.events.compactMap(\.value) }
    }

    /// Drops every waiting event, and any back-off in force.
    public func removeAll() throws(HeraldDeviceError) {
        try update { state, _ in state = ReceiptQueueDocument() }
    }

    /// Runs `body` on the queue's state under its lock, with the events past the limits dropped
    /// before and after, and saves what changed. `body` gets the time of the change.
    func update<Result>(_ body: (inout ReceiptQueueDocument, Date) -> Result) throws(HeraldDeviceError) -> Result {
        let limits = limits
        let now = now()
        return try file.update { document in
            var state = document ?? ReceiptQueueDocument()
            state.evict(limits: limits, now: now)
            let result = body(&state, now)
            state.evict(limits: limits, now: now)
            document = state
            return result
        }
    }
}
