/// The `apns-priority` header (apns-spec §1.4).
public enum PushPriority: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// 10: deliver now. APNs's default when the header is absent.
    case immediate = 10
    /// 5: power-aware delivery; may be grouped and delivered in bursts. Required for `background`.
    case throttled = 5
    /// 1: prioritise the device's power; never wakes the device.
    case low = 1

    /// The priority Herald sends when none is given: 5 for `background` (10 would be refused,
    /// §1.5), otherwise 10.
    public static func `default`(for pushType: PushType) -> PushPriority {
        pushType == .background ? .throttled : .immediate
    }

    /// Parses `10`, `5` or `1`.
    public init(header: String) throws(APNSError) {
        guard let number = Int(header), let priority = PushPriority(rawValue: number) else {
            throw APNSError(local: .badPriority, "apns-priority must be 10, 5 or 1, got '\(header)'")
        }
        self = priority
    }

    public var description: String { String(rawValue) }
}
