import HeraldCore
import HeraldStore
import Logging

/// One platform as the gateway runs it: its settings in an app's configuration and which apps
/// reach it, how its devices register and are named, what a notification may carry for it, and
/// (an instance) the workers' clients, each made when its app first sends (``ClientCache``). Each platform's conformance lives in its folder under `Platforms/`, beside its
/// ``PlatformDelivery``; ``GatewayPlatforms/all`` lists them. The rest of the gateway asks these,
/// never names a platform (docs/gateway.md, "Adding a platform").
protocol GatewayPlatform: Sendable {
    /// The devices it reaches.
    static var platform: DevicePlatform { get }

    /// Whether `app`'s configuration reaches this platform's devices.
    static func reaches(_ app: GatewayConfiguration.App) -> Bool

    /// The key of an app's settings for this platform in the configuration file (`webPush`,
    /// `fcm`); `nil` for APNs, whose settings the app's parser reads itself (`apns`, or at the
    /// app's top level as before).
    static var configurationKey: String? { get }

    /// What the settings hold and what they reach, for messages: `{serviceAccountFile} to reach
    /// Android devices`.
    static var configurationHint: String { get }

    /// An app's settings for this platform, from the object at ``configurationKey``
    /// (``GatewayConfiguration/App/platformSettings``); files are relative to `directory`.
    static func settings(_ fields: JSONFields, directory: String) throws(FieldError) -> any Sendable

    /// The same, with the environment the configuration is read with, for settings that name a
    /// secret by its environment variable (`clientSecretEnv`). By default, ``settings(_:directory:)``.
    static func settings(_ fields: JSONFields, directory: String, environment: [String: String]) throws(FieldError) -> any Sendable

    /// The 409 for a device of this platform registered with an app that does not reach it.
    static func notConfigured(_ app: String) -> APIError

    /// Why an import's line for a device of this platform is refused when its app does not reach it.
    static var notReachedLine: String { get }

    /// Where a device of this platform registers, when not at `PUT /v1/apps/{app}/devices/{token}`
    /// with `"platform"` (a browser registers its subscription); `nil`: there.
    static var registrationRoute: String? { get }

    /// The registration of a device that registers with `token` and `fields` (a device route's
    /// body, an import's line). Called only when ``registrationRoute`` is `nil`.
    static func registration(token: String, fields: DeviceRoutes.DeviceFields) throws(StoreError) -> DeviceRegistration

    /// The fields of a device's registration only this platform's devices have (`hmsAPI`), read
    /// by ``registration(token:fields:)`` from ``DeviceRoutes/DeviceFields/given``. By default none.
    static var registrationFields: [String] { get }

    /// The key of a notification's options for this platform in the API (`webPush`, `fcm`);
    /// `nil` when it has none.
    static var optionsKey: String? { get }

    /// Checks `notification` for this platform's devices before it is queued, for an app that
    /// reaches them: `options` (the object at ``optionsKey``, if the body gave it) and what the
    /// devices would receive. Returns the options as stored (``NotificationRequest/platformOptions``).
    /// Throws a `FieldError` naming the field, or an `APNSError` (`PayloadTooLarge`).
    static func check(_ notification: NotificationDraft, options: JSONFields?, app: GatewayConfiguration.App) throws -> [UInt8]?

    /// Whether `text` is the device ID of one of this platform's devices (`wp_…`, `fcm_…`):
    /// what the API takes in a path or an audience for a device whose address is not its ID.
    static func isDeviceID(_ text: String) -> Bool

    /// The device ID of the device whose platform token `text` is, when a path names a device by
    /// it (an Android device by its registration token); `nil` when it is none of this platform's.
    static func deviceID(forToken text: String) -> String?

    /// The fields of `device`, one of this platform's, that only its platform has, as the API
    /// shows them (an APNs token's environment, a browser's push service).
    static func writeFields(of device: Device, defaultEnvironment: TokenEnvironment, to writer: inout JSONWriter)

    /// No client for any app: every device of the platform fails as not configured.
    init()

    /// The workers' clients of this platform for the apps of `configuration` and of every reload
    /// after it: none is made until an app sends, and each closes when idle
    /// (``WorkerSettings/idleClientTimeout``) or when its app changes.
    /// `labels` gives each client's metrics their `app` label.
    init(configuration: GatewayConfiguration, labels: AppLabels, logger: Logger) throws

    /// How `app`'s devices of this platform are sent.
    func delivery(for app: GatewayConfiguration.App) -> any PlatformDelivery

    /// The clients made so far; `nil` for ``init()``.
    var cache: (any ClientCaching)? { get }
}

/// What a platform that needs none of these has: its settings read without the environment, no
/// registration fields of its own.
extension GatewayPlatform {
    static func settings(_ fields: JSONFields, directory: String, environment: [String: String]) throws(FieldError) -> any Sendable {
        try settings(fields, directory: directory)
    }

    static var registrationFields: [String] { [] }
}

/// The platforms the gateway sends to: a new platform is a line here, besides its folder, its
/// ``DevicePlatform`` case, its reasons and the API document (docs/gateway.md, "Adding a platform").
enum GatewayPlatforms {
    static let all: [any GatewayPlatform.Type] = [APNSPlatform.self, WebPushPlatform.self, FCMPlatform.self, HMSPlatform.self]

    /// Every platform's own registration fields (``GatewayPlatform/registrationFields``).
    static var registrationFields: [String] {
        all.flatMap { $0.registrationFields }
    }

    /// Refuses a registration field of another platform than `platform`'s.
    static func checkRegistrationFields(_ fields: JSONFields, platform: DevicePlatform) throws(FieldError) {
        for other in all where other.platform != platform {
            for name in other.registrationFields where fields.has(name) {
                throw FieldError(fields.at(name), "is for devices of platform \(other.platform.rawValue); this one is \(platform.rawValue)")
            }
        }
    }

    /// Whether `text` is a device ID of a platform whose addresses are not their IDs.
    static func isDeviceID(_ text: String) -> Bool {
        all.contains { $0.isDeviceID(text) }
    }

    /// Each platform's options of a notification (``GatewayPlatform/check(_:options:app:)``), for
    /// the platforms `app` reaches; options for one it does not reach are refused.
    static func options(of draft: NotificationDraft, in fields: JSONFields, app: GatewayConfiguration.App) throws -> [DevicePlatform: [UInt8]] {
        var options: [DevicePlatform: [UInt8]] = [:]
        for platform in all {
            var given: JSONFields?
            if let key = platform.optionsKey { given = try fields.object(key) }
            guard platform.reaches(app) else {
                if let key = platform.optionsKey, given != nil { throw FieldError(key, "app '\(app.id)' has no \(key) in the gateway's configuration") }
                continue
            }
            if let stored = try platform.check(draft, options: given, app: app) { options[platform.platform] = stored }
        }
        return options
    }

    /// The platforms whose devices register with a token and `"platform"`, by name.
    static var registeredByToken: [String] {
        all.filter { $0.registrationRoute == nil }.map { $0.platform.rawValue }
    }

    /// Where a device of `platform` registers, when not with a token (``GatewayPlatform/registrationRoute``).
    static func registrationRoute(of platform: DevicePlatform) -> String? {
        conformance(of: platform).registrationRoute
    }

    /// `platform`'s conformance.
    static func conformance(of platform: DevicePlatform) -> any GatewayPlatform.Type {
        // Every DevicePlatform case has its line in `all`: the registry's test checks it.
        all.first { $0.platform == platform }!
    }

    /// Every platform's clients for `configuration` (none when `workers` is false: this process
    /// only serves the API).
    static func clients(for configuration: GatewayConfiguration, workers: Bool, labels: AppLabels, logger: Logger) throws -> [DevicePlatform: any GatewayPlatform] {
        var made: [DevicePlatform: any GatewayPlatform] = [:]
        for platform in all {
            made[platform.platform] = workers ? try platform.init(configuration: configuration, labels: labels, logger: logger) : platform.init()
        }
        return made
    }
}
