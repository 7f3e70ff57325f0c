// The legacy protocol's value types (LegacyNotification, LegacyStatus, FeedbackTuple,
// LegacyEndpoint, LegacyError, …) live in HeraldLegacyWire, shared with the mock; users reach them
// through `import HeraldLegacy`, as NIO re-exports NIOCore. The codecs there are `package`.
@_exported import HeraldLegacyWire
