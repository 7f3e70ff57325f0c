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
    /// The workers' Web Push clients, one per app, made when the app first sends; `nil`: this
    /// process has no workers.
    let clients: ClientCache<String, WebPushClient>?
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
    static func client(for app: GatewayConfiguration.App, _ webPush: GatewayConfiguration.WebPushSettings, label: String, logger: Logger) throws -> WebPushClient {
        var settings = WebPushClient.Configuration(vapid: try VAPIDSigner(key: webPush.key, subject: webPush.subject))
        settings.additionalTrustRoots = webPush.trustRoots
        settings.subscriptionPolicy = webPush.policy
        // The queue retries: one attempt per claim, as for APNs.
        settings.retry = .none
        settings.metricsDimensions = [("app", label)]
        var clientLogger = logger
        clientLogger[metadataKey: "app"] = "\(app.id)"
        logger.info("Web Push client", metadata: ["app": "\(app.id)", "key": "\(webPush.key.publicKeyBase64URL)", "subject": "\(webPush.subject)"])
        return WebPushClient(configuration: settings, logger: clientLogger)
    }

    func delivery(for app: GatewayConfiguration.App) -> any PlatformDelivery {
        guard let clients, let webPush = app.webPush else { return WebPushDelivery(client: nil) }
        let logger = self.logger
        let labels = self.labels
        return WebPushDelivery(client: AppClient(cache: clients, app: app) { try Self.client(for: app, webPush, label: labels.label(app.id), logger: logger) })
    }

    var cache: (any ClientCaching)? { clients }
}
