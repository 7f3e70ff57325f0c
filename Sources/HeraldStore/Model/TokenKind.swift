import HeraldCore

/// Which of an app's tokens a device token is. Apple issues a different token for each service
/// an app uses (apns-spec §1.5), and each accepts only its own push types: a VoIP push to an
/// ordinary device token is refused (`DeviceTokenNotForTopic`), and an alert to a VoIP token too.
///
/// | Kind | The token the app gets from | Push types it takes | Topic |
/// |---|---|---|---|
/// | `alert` | `registerForRemoteNotifications` | `alert`, `background` | the bundle ID |
/// | `voip` | PushKit, `.voIP` | `voip` | `.voip` |
/// | `complication` | PushKit, `.complication` (watchOS) | `complication` | `.complication` |
/// | `fileprovider` | PushKit, `.fileProvider` | `fileprovider` | `.pushkit.fileprovider` |
/// | `location` | Core Location, `startMonitoringLocationPushes` | `location` | `.location-query` |
/// | `pushtotalk` | PushToTalk, the channel manager's ephemeral token | `pushtotalk` | `.voip-ptt` |
/// | `widgets` | WidgetKit's push handler | `widgets` | `.push-type.widgets` |
/// | `controls` | the control's push handler | `controls` | `.push-type.controls` |
/// | `liveactivity` | ActivityKit, `pushToStartTokenUpdates` (push-to-start) | `liveactivity` | `.push-type.liveactivity` |
///
/// `mdm` pushes go to an MDM enrolment's own topic, not an app's: no kind takes them.
public enum TokenKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case alert
    case voip
    case complication
    case fileprovider
    case location
    case pushtotalk
    case widgets
    case controls
    /// A push-to-start token of one Live Activity type (``DeviceRegistration/activityType``).
    case liveactivity

    public var description: String { rawValue }

    /// The kind of token that takes pushes of `pushType`, or `nil` for `mdm`.
    public init?(for pushType: PushType) {
        switch pushType {
        case .alert, .background: self = .alert
        case .voip: self = .voip
        case .complication: self = .complication
        case .fileprovider: self = .fileprovider
        case .location: self = .location
        case .pushtotalk: self = .pushtotalk
        case .widgets: self = .widgets
        case .controls: self = .controls
        case .liveactivity: self = .liveactivity
        case .mdm: return nil
        }
    }
}

/// Which of Apple's two push environments a device token belongs to (apns-spec §1.1): a debug
/// build of the app gets sandbox (development) tokens, an App Store or TestFlight build
/// production ones, and APNs refuses a token sent to the other (`BadDeviceToken`).
public enum TokenEnvironment: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case production
    case sandbox

    public var description: String { rawValue }
}
