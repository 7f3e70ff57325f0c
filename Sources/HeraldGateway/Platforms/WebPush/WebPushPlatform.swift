import HeraldCore
import HeraldStore
import HeraldWebPush
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Web Push as the gateway runs it: an app's `webPush` settings, browsers registered by their
/// subscriptions (at their own route), a notification's `webPush` options, and (an instance) the
/// Web Push client of each app that reaches browsers.
struct WebPushPlatform: GatewayPlatform {
    static let platform = DevicePlatform.webpush

    static func reaches(_ app: GatewayConfiguration.App) -> Bool { app.webPush != nil }

    static func notConfigured(_ app: String) -> APIError {
        APIError(
            .conflict, "webPushNotConfigured",
            "app '\(app)' has no webPush in the gateway's configuration (vapidKeyFile, subject, defaultURL): browsers cannot be sent to")
    }

    /// A browser registers its subscription (endpoint and keys), not a token.
    static let configurationKey: String? = "webPush"

    static let configurationHint = "{vapidKeyFile, subject, defaultURL} to reach browsers"

    static func settings(_ fields: JSONFields, directory: String) throws(FieldError) -> any Sendable {
        try GatewayConfiguration.App.webPush(fields, directory: directory)
    }

    static let notReachedLine = "this app has no webPush in the gateway's configuration: it cannot reach browsers"

    static func isDeviceID(_ text: String) -> Bool { WebPushAddress.isID(text) }

    static func deviceID(forToken text: String) -> String? { nil }

    static func writeFields(of device: Device, defaultEnvironment: TokenEnvironment, to writer: inout JSONWriter) {
        // The push service, not the endpoint: at some services the endpoint is the capability.
        if let webPush = device.webPush, let url = URL(string: webPush.endpoint), let origin = VAPID.origin(of: url) {
            writer.member("pushService", origin)
        }
    }

    /// What browsers receive instead of what is derived from the payload (`navigate`, `payload`).
    static let optionsKey: String? = "webPush"

    static func check(_ notification: NotificationDraft, options fields: JSONFields?, app: GatewayConfiguration.App) throws -> [UInt8]? {
        let options = try fields.map { object throws(FieldError) in try BrowserMessages.Options(object) }
        // What browsers would receive (RFC 8291: 3,993 bytes at most), refused now, not at each browser later.
        if notification.pushType == .alert, let webPush = app.webPush {
            let badge = notification.badge == .increment ? Int(Int32.max) : nil
            let browser = (try? BrowserMessages.payload(notification.payload, badge: badge, defaultURL: webPush.defaultURL, options: options))?.count ?? 0
            if browser > WebPushEncryption.maximumPlaintextCount {
                throw APNSError(
                    local: .payloadTooLarge,
                    "the payload becomes \(browser) bytes for browsers (WebKit's declarative format); Web Push carries at most \(WebPushEncryption.maximumPlaintextCount)"
                )
            }
        }
        return options?.stored
    }

    static let registrationRoute: String? = "POST /v1/apps/{app}/webpush/subscriptions"

    static func registration(token: String, fields: DeviceRoutes.DeviceFields) throws(StoreError) -> DeviceRegistration {
        throw StoreError(.invalidInput, "platform: a browser registers its subscription at \(registrationRoute!)")
    }

    /// By app ID.
    let clients: [String: WebPushClient]

    init() {
        clients = [:]
    }

    init(configuration: GatewayConfiguration, logger: Logger) throws {
        var clients: [String: WebPushClient] = [:]
        for app in configuration.apps {
            guard let webPush = app.webPush else { continue }
            var settings = WebPushClient.Configuration(vapid: try VAPIDSigner(key: webPush.key, subject: webPush.subject))
            settings.additionalTrustRoots = webPush.trustRoots
            settings.subscriptionPolicy = webPush.policy
            // The queue retries: one attempt per claim, as for APNs.
            settings.retry = .none
            settings.metricsDimensions = [("app", app.id)]
            var clientLogger = logger
            clientLogger[metadataKey: "app"] = "\(app.id)"
            logger.info("Web Push client", metadata: ["app": "\(app.id)", "key": "\(webPush.key.publicKeyBase64URL)", "subject": "\(webPush.subject)"])
            clients[app.id] = WebPushClient(configuration: settings, logger: clientLogger)
        }
        self.clients = clients
    }

    func delivery(for app: GatewayConfiguration.App) -> any PlatformDelivery {
        WebPushDelivery(client: clients[app.id])
    }

    func shutdown() async {
        await GatewayPlatforms.shutDown(clients.values) { try? await $0.shutdown() }
    }
}
