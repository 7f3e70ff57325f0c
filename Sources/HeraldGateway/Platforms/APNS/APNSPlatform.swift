import HeraldAPNS
import HeraldCore
import HeraldStore
import Logging

/// APNs as the gateway runs it: an app's `apns` settings (read with the app's own, as before),
/// device tokens with their kinds and environments, and (an instance) the workers' APNs clients:
/// one per app, token environment and credential (the app's, and each token kind's own), each
/// made when it has something to send (an app without sandbox devices never opens a sandbox
/// connection) and closed when idle.
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

    /// The workers' APNs clients: one per app, token environment and credential (the app's, and
    /// each token kind's own), made when the first batch needs it; `nil`: this process has no
    /// workers, and every device fails as not configured.
    let clients: ClientCache<AppEnvironment, APNSClient>?
    private let labels: AppLabels
    private let logger: Logger

    init() {
        clients = nil
        labels = AppLabels(limit: 0)
        logger = Logger(label: "herald.gateway", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    init(configuration: GatewayConfiguration, labels: AppLabels, logger: Logger) throws {
        self.labels = labels
        clients = ClientCache(idleAfter: configuration.workers.idleClientTimeout) { await $0.shutdown() }
        self.logger = logger
    }

    /// The credential that serves `app`'s devices of `environment` and `kind` (a kind with a
    /// credential of its own, or `nil`: the others); `nil` when the app has none for the
    /// environment (``GatewayConfiguration/App/credentials(for:)-(TokenEnvironment)``), whose devices are not sent.
    static func credential(of app: GatewayConfiguration.App, environment: TokenEnvironment, kind: TokenKind?) -> APNSCredentials? {
        guard let environmentCredentials = app.credentials(for: environment) else { return nil }
        return kind.flatMap { app.credentialsByKind[$0] } ?? environmentCredentials
    }

    /// Runs `body` with the workers' client of `key` for `app`, made on first use; `nil` (and
    /// `body` is not run) when the app has no credential for the key's environment, or the
    /// clients have shut down.
    func using<Result: Sendable>(
        _ key: AppEnvironment, app: GatewayConfiguration.App, _ body: (APNSClient) async throws -> Result
    ) async throws -> Result? {
        guard let clients, let credential = Self.credential(of: app, environment: key.environment, kind: key.kind) else { return nil }
        let logger = self.logger
        let labels = self.labels
        return try await clients.using(key, app: app, make: {
            let logger = Self.logger(logger, app: app, environment: key.environment)
            let kinds = key.kind.map { [$0] } ?? TokenKind.allCases.filter { app.credentialsByKind[$0] == nil }
            logger.info(
                "APNs client",
                metadata: [
                    "host": "\(app.host(for: key.environment))", "credential": "\(GatewayConfiguration.App.describe(credential))",
                    "kinds": "\(kinds.map(\.rawValue).joined(separator: ","))", "default": "\(key.environment == app.defaultEnvironment)",
                ]
            )
            return try Self.client(
                for: app, host: app.host(for: key.environment), credentials: credential, connections: app.connections, label: labels.label(app.id), logger: logger)
        }, body)
    }

    /// A client of `app` to `host` with `credentials`: the app's trusted roots, and `label` as its metrics' `app` (``AppLabels``).
    static func client(
        for app: GatewayConfiguration.App, host: APNSEnvironment, credentials: APNSCredentials, connections: Int, label: String, logger: Logger
    ) throws -> APNSClient {
        var client = APNSClient.Configuration(environment: host, credentials: credentials)
        client.trustRoots = app.trustRoots
        client.pool.maximumConnections = connections
        client.metrics.dimensions = [("app", label)]
        client.retry = retryPolicy
        return try APNSClient(configuration: client, logger: logger)
    }

    /// The workers' retries within a claim: a lost connection is sent again at once, and a 500 or
    /// 503 once more after a quarter second; past that the queue retries, and a host that keeps
    /// failing is backed off (``HostIsolation``) within a second of the outage, not after the
    /// default policy's four back-offs (about 15 s of each worker held).
    static let retryPolicy = RetryPolicy(
        maximumAttempts: 2, initialBackoff: .milliseconds(250), maximumBackoff: .seconds(1), jitter: 0.2, providerTokenUpdateDelay: .seconds(2))

    /// `logger` with the app and the token environment.
    static func logger(_ logger: Logger, app: GatewayConfiguration.App, environment: TokenEnvironment) -> Logger {
        var clientLogger = logger
        clientLogger[metadataKey: "app"] = "\(app.id)"
        clientLogger[metadataKey: "environment"] = "\(environment)"
        return clientLogger
    }

    func delivery(for app: GatewayConfiguration.App) -> any PlatformDelivery {
        APNSDelivery(platform: self)
    }

    var cache: (any ClientCaching)? { clients }
}
