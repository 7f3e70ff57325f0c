/// Which push service a device is reached through.
public enum DevicePlatform: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// An APNs device token.
    case apns
    /// A browser's Web Push subscription.
    case webpush
    /// An Android device's FCM registration token.
    case fcm

    /// The platform of a device ID or token as the store keeps it: `wp_…` a browser, `fcm_…` an
    /// Android device, anything else an APNs token.
    public init(deviceID token: some StringProtocol) {
        self = Self.platform(of: token)
    }

    /// The same for a `String`, the type the gateway holds every device ID in: a call from
    /// another module to the generic initialiser is not specialised, and this runs several
    /// times for each device sent to.
    public init(deviceID token: String) {
        self = Self.platform(of: token)
    }

    private static func platform(of token: some StringProtocol) -> DevicePlatform {
        // A Web Push or FCM ID has its own length: any other is an APNs token, as nearly every
        // device a gateway sends to is.
        switch token.utf8.count {
        case Base32.deviceIDLength(prefix: WebPushAddress.idPrefix), Base32.deviceIDLength(prefix: FCMAddress.idPrefix):
            WebPushAddress.isID(token) ? .webpush : FCMAddress.isID(token) ? .fcm : .apns
        default:
            .apns
        }
    }

    public var description: String { rawValue }
}
