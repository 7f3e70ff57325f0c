import HeraldCore
import HeraldFCM
import HeraldStore
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// FCM as the gateway runs it: an app's `fcm` settings, Android devices registered by their
/// registration tokens (`"platform": "fcm"`), a notification's `fcm` refinement, and (an
/// instance) the FCM client of each app that reaches Android devices.
struct FCMPlatform: GatewayPlatform {
    static let platform = DevicePlatform.fcm

    static func reaches(_ app: GatewayConfiguration.App) -> Bool { app.fcm != nil }

    static func notConfigured(_ app: String) -> APIError {
        APIError(.conflict, "fcmNotConfigured", "app '\(app)' has no fcm in the gateway's configuration (serviceAccountFile): Android devices cannot be sent to")
    }

    static let configurationKey: String? = "fcm"

    static let configurationHint = "{serviceAccountFile} to reach Android devices"

    static func settings(_ fields: JSONFields, directory: String) throws(FieldError) -> any Sendable {
        try GatewayConfiguration.App.fcm(fields, directory: directory)
    }

    static let notReachedLine = "this app has no fcm in the gateway's configuration: it cannot reach Android devices"

    static func isDeviceID(_ text: String) -> Bool { FCMAddress.isID(text) }

    /// An Android device by its registration token (never all hex: that is an APNs token).
    static func deviceID(forToken text: String) -> String? {
        FCMAddress.isValid(text) && !DeviceToken.isHexDigits(text) ? FCMAddress.id(forToken: text) : nil
    }

    static func writeFields(of device: Device, defaultEnvironment: TokenEnvironment, to writer: inout JSONWriter) {
        if let fcm = device.fcm { writer.member("registrationToken", fcm.registrationToken) }
    }

    /// A JSON merge patch (RFC 7386) over the FCM message derived from the payload.
    static let optionsKey: String? = "fcm"

    /// What Android devices would receive, refused now (reserved data keys, FCM's 4,096 bytes, a
    /// refinement FCM would refuse) rather than at each device later.
    static func check(_ notification: NotificationDraft, options fields: JSONFields?, app: GatewayConfiguration.App) throws -> [UInt8]? {
        var refinement = try fields.map { object throws(FieldError) in try AndroidMessages.refinement(object) }
        // The notification's analytics label, under what its own fcm patch says (which may name another).
        if let label = notification.analyticsLabel {
            let labelled = JSONValue.object(["fcm_options": .object(["analytics_label": .string(label)])])
            let given = refinement.flatMap { try? JSONValue(parsing: $0) }
            refinement = Array(AndroidMessages.mergePatch(labelled, given ?? .object([:])).jsonString.utf8)
        }
        if notification.pushType == .alert || notification.pushType == .background {
            var derived = AndroidMessages.derived(
                payload: notification.payload, pushType: notification.pushType, priority: notification.priority, expiration: notification.expiration,
                deadline: Date.distantFuture, collapseID: notification.collapseID, now: Date())
            if let refinement, let patch = try? JSONValue(parsing: refinement) { derived = AndroidMessages.mergePatch(derived, patch) }
            do throws(FCMError) {
                try FCMMessage(raw: derived, token: AndroidMessages.placeholderToken).validate()
            } catch {
                throw FieldError(refinement == nil ? "payload" : "fcm", "for Android devices (FCM): \(error.message)")
            }
        }
        return refinement
    }

    static let registrationRoute: String? = nil

    /// An Android device registers its FCM registration token as its token, with `"platform": "fcm"`.
    static func registration(token: String, fields: DeviceRoutes.DeviceFields) throws(StoreError) -> DeviceRegistration {
        // FCM has no token kinds or environments: a registration token reaches its device.
        for (name, given) in [("kind", fields.kind != nil), ("activityType", fields.activityType != nil), ("environment", fields.environment != nil)] where given {
            throw StoreError(.invalidInput, "\(name): an Android device (platform fcm) has none; it is APNs's")
        }
        var registration = try DeviceRegistration(fcm: FCMAddress(registrationToken: token), user: fields.user, tags: fields.tags, badge: fields.badge)
        try registration.setTimeZone(fields.timeZone)
        return registration
    }

    /// By app ID.
    /// The workers' FCM clients, one per app, made when the app first sends; `nil`: this process
    /// has no workers.
    let clients: ClientCache<String, FCMClient>?
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
    static func client(for app: GatewayConfiguration.App, _ fcm: GatewayConfiguration.FCMSettings, label: String, logger: Logger) throws -> FCMClient {
        var settings = FCMClient.Configuration(serviceAccount: fcm.serviceAccount)
        settings.endpoint = fcm.endpoint
        settings.additionalTrustRoots = fcm.trustRoots
        settings.maximumConnections = fcm.connections
        // The queue retries: one attempt per claim, as for APNs.
        settings.retry = .none
        settings.metricsDimensions = [("app", label)]
        var clientLogger = logger
        clientLogger[metadataKey: "app"] = "\(app.id)"
        logger.info("FCM client", metadata: ["app": "\(app.id)", "project": "\(fcm.serviceAccount.projectID)", "endpoint": "\(fcm.endpoint)"])
        return try FCMClient(configuration: settings, logger: clientLogger)
    }

    func delivery(for app: GatewayConfiguration.App) -> any PlatformDelivery {
        guard let clients, let fcm = app.fcm else { return FCMDelivery(client: nil) }
        let logger = self.logger
        let labels = self.labels
        return FCMDelivery(client: AppClient(cache: clients, app: app) { try Self.client(for: app, fcm, label: labels.label(app.id), logger: logger) })
    }

    var cache: (any ClientCaching)? { clients }
}
