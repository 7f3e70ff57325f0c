/// Which push service a device is reached through. The store keeps each device's, from what it
/// registered with (``WorkItem/platform``).
public enum DevicePlatform: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// An APNs device token.
    case apns
    /// A browser's Web Push subscription.
    case webpush
    /// An Android device's FCM registration token.
    case fcm
    /// A Huawei device's Push Kit token (HMS Core on Android, or HarmonyOS NEXT).
    case hms

    /// The platform a device ID's form says: `wp_…` a browser, `fcm_…` an Android device, `hms_…`
    /// a Huawei device, anything else an APNs token. For tools and callers that hold only an ID: the gateway reads
    /// each device's platform from the store, not from its ID.
    public init(deviceID token: some StringProtocol) {
        self = Self.platform(of: token)
    }

    /// The same for a `String`: a call from another module to the generic initialiser is not
    /// specialised.
    public init(deviceID token: String) {
        self = Self.platform(of: token)
    }

    private static func platform(of token: some StringProtocol) -> DevicePlatform {
        // A Web Push or FCM ID has its own length: any other is an APNs token, as nearly every
        // device a gateway sends to is.
        switch token.utf8.count {
        case Base32.deviceIDLength(prefix: WebPushAddress.idPrefix), Base32.deviceIDLength(prefix: FCMAddress.idPrefix):
            WebPushAddress.isID(token) ? .webpush : FCMAddress.isID(token) ? .fcm : Base32.isDeviceID(token, prefix: Self.hmsIDPrefix) ? .hms : .apns
        default:
            .apns
        }
    }

    /// A Huawei device's ID prefix (the gateway's `HMSAddress`, whose IDs are FCM's length).
    private static let hmsIDPrefix = "hms_"

    public var description: String { rawValue }

    /// The number the store keeps for it (each device's, each delivery's, each count's
    /// platform). Stored data: never renumber a platform, only add one.
    package var code: Int {
        switch self {
        case .apns: 0
        case .webpush: 1
        case .fcm: 2
        case .hms: 3
        }
    }
}
