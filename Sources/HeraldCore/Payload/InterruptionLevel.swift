/// `aps.interruption-level`: how strongly the notification may interrupt (apns-spec §3.1).
public enum InterruptionLevel: String, Sendable, Hashable, CaseIterable {
    case passive
    case active
    case timeSensitive = "time-sensitive"
    case critical
}

/// `aps.event` of a Live Activity push (apns-spec §3.1).
public enum LiveActivityEvent: String, Sendable, Hashable, CaseIterable {
    case start
    case update
    case end
}
