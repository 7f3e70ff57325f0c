import HeraldAPNS
import HeraldCore
import HeraldStore
import Logging

/// APNs as the gateway runs it: an app's `apns` settings (read with the app's own, as before),
/// device tokens with their kinds and environments, and (an instance) the workers' APNs clients:
/// one per app, token environment and credential (the app's, and each token kind's own), each
/// connecting only when it has something to send (an app without sandbox devices never opens a
/// sandbox connection).
struct APNSPlatform: GatewayPlatform {
    static let platform = DevicePlatform.apns

    static func reaches(_ app: GatewayConfiguration.App) -> Bool { app.apnsTopic != nil }

    static func notConfigured(_ app: String) -> APIError { .apnsNotConfigured(app) }

    static let configurationKey: String? = nil

    static let configurationHint = "{topic, environment, authKey {file, keyID, teamID} and/or certificate {file, passwordEnv}} to reach APNs"

    /// Never called: APNs has no ``configurationKey``; the app's parser reads its settings.
    static func settings(_ fields: JSONFields, directory: String) throws(FieldError) -> any Sendable {
        throw FieldError(fields.path, "APNs settings are read with the app's")
    }

    static let notReachedLine = "this app has no APNs credentials in the gateway's configuration: it reaches browsers and Android devices only"

    /// An APNs device is named by its token itself.
    static func isDeviceID(_ text: String) -> Bool { false }

    static func deviceID(forToken text: String) -> String? { nil }

    static func writeFields(of device: Device, defaultEnvironment: TokenEnvironment, to writer: inout JSONWriter) {
        writer.member("environment", (device.environment ?? defaultEnvironment).rawValue)
    }

    /// APNs's options are the notification's own fields, checked with its payload.
    static let optionsKey: String? = nil

    static func check(_ notification: NotificationDraft, options: JSONFields?, app: GatewayConfiguration.App) throws -> [UInt8]? { nil }

    static let registrationRoute: String? = nil

    /// An APNs device token, with its kind, activity type and environment.
    static func registration(token: String, fields: DeviceRoutes.DeviceFields) throws(StoreError) -> DeviceRegistration {
        do {
            var registration = try DeviceRegistration(
                token: token, user: fields.user, tags: fields.tags, badge: fields.badge, kind: fields.kind, activityType: fields.activityType,
                environment: fields.environment)
            try registration.setTimeZone(fields.timeZone)
            return registration
        } catch where FCMAddress.isValid(token) && !DeviceToken.isHexDigits(token) {
            throw StoreError(.invalidInput, "\(error.message); an Android device's FCM registration token needs \"platform\": \"fcm\"")
        }
    }

    let clients: [AppEnvironment: APNSClient]

    init() {
        clients = [:]
    }

    init(configuration: GatewayConfiguration, logger: Logger) throws {
        var clients: [AppEnvironment: APNSClient] = [:]
        for app in configuration.apps {
            // An app that reaches browsers or Android devices only has no APNs client.
            guard app.credentials != nil else { continue }
            let byKind = TokenKind.allCases.compactMap { kind in app.credentialsByKind[kind].map { (kind: Optional(kind), credentials: $0) } }
            for tokenEnvironment in TokenEnvironment.allCases {
                let logger = Self.logger(logger, app: app, environment: tokenEnvironment)
                // The environment's own credential (a key scoped to it), else the app's; none:
                // its devices fail with APNsEnvironmentNotConfigured, and no client is made.
                guard let environmentCredentials = app.credentials(for: tokenEnvironment) else {
                    logger.info("no APNs credential for this environment: its devices are not sent to", metadata: ["host": "\(app.host(for: tokenEnvironment))"])
                    continue
                }
                let credentials = [(kind: TokenKind?.none, credentials: environmentCredentials)] + byKind
                for (kind, credential) in credentials {
                    let kinds = kind.map { [$0] } ?? TokenKind.allCases.filter { app.credentialsByKind[$0] == nil }
                    // Decided once per configuration: which host and credential serve this
                    // app's devices of this environment and kinds.
                    logger.info(
                        "APNs client",
                        metadata: [
                            "host": "\(app.host(for: tokenEnvironment))", "credential": "\(GatewayConfiguration.App.describe(credential))",
                            "kinds": "\(kinds.map(\.rawValue).joined(separator: ","))", "default": "\(tokenEnvironment == app.defaultEnvironment)",
                        ]
                    )
                    clients[AppEnvironment(app: app.id, environment: tokenEnvironment, kind: kind)] =
                        try Self.client(for: app, host: app.host(for: tokenEnvironment), credentials: credential, connections: app.connections, logger: logger)
                }
            }
        }
        self.clients = clients
    }

    /// A client of `app` to `host` with `credentials`: the app's trusted roots, its `app` metrics dimension.
    static func client(
        for app: GatewayConfiguration.App, host: APNSEnvironment, credentials: APNSCredentials, connections: Int, logger: Logger
    ) throws -> APNSClient {
        var client = APNSClient.Configuration(environment: host, credentials: credentials)
        client.trustRoots = app.trustRoots
        client.pool.maximumConnections = connections
        client.metrics.dimensions = [("app", app.id)]
        return try APNSClient(configuration: client, logger: logger)
    }

    /// `logger` with the app and the token environment.
    static func logger(_ logger: Logger, app: GatewayConfiguration.App, environment: TokenEnvironment) -> Logger {
        var clientLogger = logger
        clientLogger[metadataKey: "app"] = "\(app.id)"
        clientLogger[metadataKey: "environment"] = "\(environment)"
        return clientLogger
    }

    func delivery(for app: GatewayConfiguration.App) -> any PlatformDelivery {
        APNSDelivery(clients: clients)
    }

    func shutdown() async {
        await GatewayPlatforms.shutDown(clients.values) { await $0.shutdown() }
    }
}
