import HeraldCore
import HeraldHMS
import HeraldStore
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Huawei Push Kit as the gateway runs it: an app's `hms` settings, Huawei devices registered by
/// their push tokens (`"platform": "hms"`, with `"hmsAPI": "android"` or `"harmony"`), a
/// notification's `hms` refinement, and (an instance) the Push Kit client of each app that
/// reaches Huawei devices.
struct HMSPlatform: GatewayPlatform {
    static let platform = DevicePlatform.hms

    static func reaches(_ app: GatewayConfiguration.App) -> Bool { app.hms != nil }

    static func notConfigured(_ app: String) -> APIError {
        APIError(
            .conflict, "hmsNotConfigured",
            "app '\(app)' has no hms in the gateway's configuration (clientID and clientSecretEnv, and/or serviceAccountFile): Huawei devices cannot be sent to")
    }

    static let configurationKey: String? = "hms"

    static let configurationHint = "{clientID, clientSecretEnv and/or serviceAccountFile} to reach Huawei devices"

    /// With the process's environment, for a caller without one of its own.
    static func settings(_ fields: JSONFields, directory: String) throws(FieldError) -> any Sendable {
        try settings(fields, directory: directory, environment: ProcessInfo.processInfo.environment)
    }

    /// The client secret comes from the environment variable `clientSecretEnv` names.
    static func settings(_ fields: JSONFields, directory: String, environment: [String: String]) throws(FieldError) -> any Sendable {
        try GatewayConfiguration.App.hms(fields, directory: directory, environment: environment)
    }

    static let notReachedLine = "this app has no hms in the gateway's configuration: it cannot reach Huawei devices"

    static func isDeviceID(_ text: String) -> Bool { HMSAddress.isID(text) }

    /// A Huawei device by its push token (never all hex: that is an APNs token). FCM, listed
    /// first, claims the tokens of its own alphabet: those are found by their `hms_…` ID.
    static func deviceID(forToken text: String) -> String? {
        HMSPushToken.isValid(text) && !DeviceToken.isHexDigits(text) ? HMSAddress.id(forToken: text) : nil
    }

    static func writeFields(of device: Device, defaultEnvironment: TokenEnvironment, to writer: inout JSONWriter) {
        guard let address = HMSAddress(device.address) else { return }
        writer.member("pushToken", address.pushToken)
        writer.member("hmsAPI", address.api.rawValue)
    }

    /// `{"android"?, "harmony"?}`: JSON merge patches over what each API's devices receive.
    static let optionsKey: String? = "hms"

    /// What Huawei devices would receive through each API the app has, refused now (Push Kit's
    /// 4,096 bytes, a refinement Push Kit would refuse) rather than at each device later.
    static func check(_ notification: NotificationDraft, options fields: JSONFields?, app: GatewayConfiguration.App) throws -> [UInt8]? {
        let refinement = try fields.map { object throws(FieldError) in try HuaweiMessages.refinement(object) }
        guard notification.pushType == .alert || notification.pushType == .background, let settings = app.hms else { return refinement }
        let now = Date()
        for api in HMSAddress.API.allCases where settings.reaches(api) {
            let patched = refinement.flatMap { (try? JSONValue(parsing: $0))?[api.rawValue] } != nil
            do throws(HMSError) {
                switch api {
                case .android:
                    let derived = HuaweiMessages.android(
                        payload: notification.payload, pushType: notification.pushType, expiration: notification.expiration, deadline: .distantFuture,
                        collapseID: notification.collapseID, now: now)
                    _ = try HuaweiMessages.androidMessage(
                        HuaweiMessages.refined(derived, by: refinement, api: .android), tokens: [HuaweiMessages.placeholderToken])
                case .harmony:
                    let derived = HuaweiMessages.harmony(
                        payload: notification.payload, pushType: notification.pushType, expiration: notification.expiration, deadline: .distantFuture, now: now)
                    _ = try HuaweiMessages.harmonyMessage(
                        HuaweiMessages.refined(derived.body, by: refinement, api: .harmony), pushType: derived.pushType, tokens: [HuaweiMessages.placeholderToken])
                }
            } catch {
                throw FieldError(patched ? "hms.\(api.rawValue)" : "payload", "for Huawei devices (\(api == .android ? "Push Kit's Android API" : "HarmonyOS NEXT")): \(error.message)")
            }
        }
        return refinement
    }

    static let registrationRoute: String? = nil

    /// `hmsAPI`: which of Push Kit's APIs reaches the device.
    static let registrationFields = ["hmsAPI"]

    /// A Huawei device registers its Push Kit token as its token, with `"platform": "hms"` and
    /// `"hmsAPI"`: `android` (HMS Core) or `harmony` (HarmonyOS NEXT). Required, every time: the
    /// registration replaces the stored address, and a HarmonyOS device sent through the Android
    /// API would never receive anything.
    static func registration(token: String, fields: DeviceRoutes.DeviceFields) throws(StoreError) -> DeviceRegistration {
        // Push Kit has no token kinds or environments: a push token reaches its device.
        for (name, given) in [("kind", fields.kind != nil), ("activityType", fields.activityType != nil), ("environment", fields.environment != nil)] where given {
            throw StoreError(.invalidInput, "\(name): a Huawei device (platform hms) has none; it is APNs's")
        }
        let apis = HMSAddress.API.allCases.map(\.rawValue).joined(separator: " or ")
        guard case .string(let name)? = fields.given?.members["hmsAPI"] else {
            throw StoreError(.invalidInput, "hmsAPI: required for platform hms: \(apis) (HMS Core on Android, or HarmonyOS NEXT)")
        }
        guard let api = HMSAddress.API(rawValue: name) else {
            throw StoreError(.invalidInput, "hmsAPI: must be \(apis) (HMS Core on Android, or HarmonyOS NEXT)")
        }
        var registration = try DeviceRegistration(address: HMSAddress(api: api, pushToken: token), user: fields.user, tags: fields.tags, badge: fields.badge)
        try registration.setTimeZone(fields.timeZone)
        return registration
    }

    /// The workers' Push Kit clients, one per app, made when the app first sends; `nil`: this
    /// process has no workers.
    let clients: ClientCache<String, HMSClient>?
    private let labels: AppLabels
    private let logger: Logger

    init() {
        clients = nil
        labels = AppLabels(limit: 0)
        logger = Logger(label: "herald.gateway", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    init(configuration: GatewayConfiguration, labels: AppLabels, logger: Logger) throws {
        self.labels = labels
        clients = ClientCache(idleAfter: configuration.workers.idleClientTimeout) { try? await $0.shutdown() }
        self.logger = logger
    }

    /// `app`'s client, as it is made when the app first sends.
    static func client(for app: GatewayConfiguration.App, _ hms: GatewayConfiguration.HMSSettings, label: String, logger: Logger) throws -> HMSClient {
        var settings = HMSClient.Configuration(app: hms.app, serviceAccount: hms.serviceAccount)
        settings.endpoint = hms.endpoint
        settings.additionalTrustRoots = hms.trustRoots
        settings.maximumConnections = hms.connections
        // The queue retries: one attempt per claim, as for APNs and FCM.
        settings.retry = .none
        settings.metricsDimensions = [("app", label)]
        var clientLogger = logger
        clientLogger[metadataKey: "app"] = "\(app.id)"
        logger.info(
            "Push Kit client",
            metadata: [
                "app": "\(app.id)", "android": "\(hms.app.map { "client \($0.clientID)" } ?? "none")",
                "harmony": "\(hms.serviceAccount.map { "project \($0.projectID)" } ?? "none")", "endpoint": "\(hms.endpoint)",
            ])
        return try HMSClient(configuration: settings, logger: clientLogger)
    }

    func delivery(for app: GatewayConfiguration.App) -> any PlatformDelivery {
        guard let clients, let hms = app.hms else { return HMSDelivery(client: nil) }
        let logger = self.logger
        let labels = self.labels
        return HMSDelivery(client: AppClient(cache: clients, app: app) { try Self.client(for: app, hms, label: labels.label(app.id), logger: logger) })
    }

    var cache: (any ClientCaching)? { clients }
}

extension PlatformOptionsHolder {
    /// What refines the Push Kit messages derived from `payload`: `{"android"?, "harmony"?}`, JSON
    /// merge patches (the gateway's `hms` field).
    var hms: [UInt8]? {
        get { platformOptions[.hms] }
        set { platformOptions[.hms] = newValue }
    }
}
