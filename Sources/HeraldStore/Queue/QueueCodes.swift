/// The codes the queue's tables hold for statuses, states and kinds: one table, here. SQL reads
/// them through these types (`WHERE state = \(DeliveryState.pending)`), never as digits typed
/// into a statement. The numbers are stored data: never renumber a case, only add.
protocol StoredCode: RawRepresentable, CaseIterable, CustomStringConvertible, Sendable where RawValue == Int {}

extension StoredCode {
    /// The code as SQL reads it.
    var description: String { String(rawValue) }
    /// The case stored as `code`, or `nil` for a code this Herald never writes.
    init?(code: Int64?) {
        guard let code, let known = Self.allCases.first(where: { Int64($0.rawValue) == code }) else { return nil }
        self = known
    }
}

/// Where one device of a notification stands.
/// A device's platform as the tables hold it (`devices.platform`, `deliveries.platform`,
/// `notification_platforms.platform`): ``DevicePlatform/code``.
struct PlatformCode: CustomStringConvertible, Sendable {
    let platform: DevicePlatform

    init(_ platform: DevicePlatform) {
        self.platform = platform
    }

    /// The platform stored as `code`, or `nil` for a code this Herald never writes.
    init?(code: Int64?) {
        guard let code, let platform = DevicePlatform.allCases.first(where: { Int64($0.code) == code }) else { return nil }
        self.platform = platform
    }

    /// The code as SQL reads it.
    var description: String { String(platform.code) }

    /// A stored platform: APNs for NULL or a code this Herald never writes (stored before
    /// platforms were, or by a newer Herald).
    static func platform(_ code: Int64?) -> DevicePlatform { PlatformCode(code: code)?.platform ?? .apns }
}

enum DeliveryState: Int, StoredCode {
    /// Due at its `next_attempt_at`.
    case pending = 0
    /// Leased to a worker until `lease_expires_at`.
    case claimed = 1
    case accepted = 2
    case rejected = 3
    case failed = 4
    /// Not sent, for good (``SkipReason``).
    case optedOut = 5
    case capped = 6
    case digested = 7

    /// The first state of a finished delivery: `state < \(DeliveryState.finished)` is still to send.
    static let finished = DeliveryState.accepted

    init(_ outcome: DeliveryRecord.Outcome) {
        switch outcome {
        case .accepted: self = .accepted
        case .rejected: self = .rejected
        case .failed: self = .failed
        case .optedOut: self = .optedOut
        case .capped: self = .capped
        case .digested: self = .digested
        }
    }

    init(_ skip: SkipReason) {
        switch skip {
        case .optedOut: self = .optedOut
        case .capped: self = .capped
        case .digested: self = .digested
        }
    }

    var outcome: DeliveryRecord.Outcome? {
        switch self {
        case .accepted: .accepted
        case .rejected: .rejected
        case .failed: .failed
        case .optedOut: .optedOut
        case .capped: .capped
        case .digested: .digested
        case .pending, .claimed: nil
        }
    }

    /// The reason a device was not sent, for a skipped delivery.
    var skip: SkipReason? {
        switch self {
        case .optedOut: .optedOut
        case .capped: .capped
        case .digested: .digested
        default: nil
        }
    }
}

/// Where a notification stands.
enum NotificationState: Int, StoredCode {
    case queued = 0
    case sending = 1
    case done = 2
    case cancelled = 3

    /// The first state of a finished notification.
    static let finished = NotificationState.done

    init(_ status: NotificationStatus) {
        switch status {
        case .queued, .scheduled: self = .queued
        case .sending: self = .sending
        case .done: self = .done
        case .cancelled: self = .cancelled
        }
    }

    var status: NotificationStatus {
        switch self {
        case .queued: .queued
        case .sending: .sending
        case .done: .done
        case .cancelled: .cancelled
        }
    }
}

/// Where a broadcast's key range stands.
enum SegmentState: Int, StoredCode {
    case pending = 0
    case claimed = 1
    case done = 2
}

/// A Live Activity's state as stored (`activities.state`).
enum ActivityCode: Int, StoredCode {
    case active = 0
    case ended = 1

    var state: LiveActivityState { self == .ended ? .ended : .active }
}

/// A device's status as stored.
enum DeviceCode: Int, StoredCode {
    case active = 0
    case unregistered = 1
    case invalid = 2

    init(_ status: DeviceStatus) {
        switch status {
        case .active: self = .active
        case .unregistered: self = .unregistered
        case .invalid: self = .invalid
        }
    }

    var status: DeviceStatus {
        switch self {
        case .active: .active
        case .unregistered: .unregistered
        case .invalid: .invalid
        }
    }
}

/// How a notification's audience is stored: a kind and its newline-separated values.
enum AudienceKind: Int, StoredCode {
    case tokens = 0
    case users = 1
    case tags = 2
    case all = 3
    case activity = 4

    static func encode(_ audience: Audience) -> (kind: AudienceKind, values: String) {
        switch audience {
        case .tokens(let tokens): (.tokens, tokens.joined(separator: "\n"))
        case .users(let users): (.users, users.joined(separator: "\n"))
        case .tags(let tags): (.tags, tags.joined(separator: "\n"))
        case .all: (.all, "")
        case .activity(let id): (.activity, id)
        }
    }

    func audience(_ values: String) -> Audience {
        let list = values.isEmpty ? [] : values.split(separator: "\n").map(String.init)
        switch self {
        case .tokens: return .tokens(list)
        case .users: return .users(list)
        case .tags: return .tags(list)
        case .all: return .all
        case .activity: return .activity(values)
        }
    }
}

/// A notification's badge mode as stored.
enum BadgeCode: Int, StoredCode {
    case none = 0
    case increment = 1

    init(_ mode: BadgeMode) { self = mode == .increment ? .increment : .none }
    var mode: BadgeMode { self == .increment ? .increment : .none }
}

/// Tags as stored in a device row: sorted, comma-separated.
enum TagList {
    static func encode(_ tags: Set<String>) -> String { tags.sorted().joined(separator: ",") }
    static func decode(_ tags: String?) -> Set<String> {
        guard let tags, !tags.isEmpty else { return [] }
        return Set(tags.split(separator: ",").map(String.init))
    }
}

/// A device's token kind as stored (`devices.kind`, migration 7).
enum KindCode: Int, StoredCode {
    case alert = 0
    case voip = 1
    case complication = 2
    case fileprovider = 3
    case location = 4
    case pushtotalk = 5
    case widgets = 6
    case controls = 7
    case liveactivity = 8

    /// The one table of kinds and codes; ``kind`` reads it backwards.
    init(_ kind: TokenKind) {
        switch kind {
        case .alert: self = .alert
        case .voip: self = .voip
        case .complication: self = .complication
        case .fileprovider: self = .fileprovider
        case .location: self = .location
        case .pushtotalk: self = .pushtotalk
        case .widgets: self = .widgets
        case .controls: self = .controls
        case .liveactivity: self = .liveactivity
        }
    }

    var kind: TokenKind { TokenKind.allCases.first { KindCode($0) == self } ?? .alert }
}

/// A device's environment as stored (`devices.environment`, `deliveries.environment`); NULL:
/// the app's own.
enum EnvironmentCode: Int, StoredCode {
    case production = 0
    case sandbox = 1

    init(_ environment: TokenEnvironment) { self = environment == .sandbox ? .sandbox : .production }
    var environment: TokenEnvironment { self == .sandbox ? .sandbox : .production }

    /// A stored environment, `nil` for NULL (the app's) or a code this Herald never writes.
    static func environment(_ code: Int64?) -> TokenEnvironment? { EnvironmentCode(code: code)?.environment }
}

/// An event's type as the tables hold it (`events.type`, and `receipts.event` for the four a
/// device reports).
enum EventCode: Int, StoredCode {
    case queued = 0
    case accepted = 1
    case rejected = 2
    case failed = 3
    case retired = 4
    case completed = 5
    case received = 6
    case opened = 7
    case dismissed = 8
    case clicked = 9

    init(_ type: StreamEventType) {
        switch type {
        case .queued: self = .queued
        case .accepted: self = .accepted
        case .rejected: self = .rejected
        case .failed: self = .failed
        case .retired: self = .retired
        case .completed: self = .completed
        case .received: self = .received
        case .opened: self = .opened
        case .dismissed: self = .dismissed
        case .clicked: self = .clicked
        }
    }

    init(_ event: ReceiptEvent) {
        switch event {
        case .received: self = .received
        case .opened: self = .opened
        case .dismissed: self = .dismissed
        case .clicked: self = .clicked
        }
    }

    var type: StreamEventType { StreamEventType.allCases.first { EventCode($0) == self } ?? .queued }
    var receiptEvent: ReceiptEvent? { ReceiptEvent.allCases.first { EventCode($0) == self } }
}

extension TokenKind {
    /// The number the store keeps for it (``KindCode``), which a receipt carries too.
    package var code: Int { KindCode(self).rawValue }

    /// The kind stored as `code`, or `nil` for a code this Herald never writes.
    package init?(code: Int) {
        guard let kind = KindCode(code: Int64(code))?.kind else { return nil }
        self = kind
    }
}
