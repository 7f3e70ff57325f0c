/// The command a notification is framed with (§4.1-§4.3).
public enum LegacyCommand: UInt8, Sendable, Hashable, CaseIterable {
    /// Command 0: token and payload only (priority 10 implied), no identifier.
    case simple = 0
    /// Command 1: with identifier and expiry.
    case enhanced = 1
    /// Command 2: a frame of items, with priority.
    case frame = 2

    /// The largest payload: 256 bytes for commands 0 and 1, 2048 for command 2 (§1.8).
    public var maximumPayloadSize: Int { self == .frame ? 2048 : 256 }
}
