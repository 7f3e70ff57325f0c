import HeraldAPNS
import HeraldCore
import HeraldFCM
import HeraldStore
import HeraldWebPush
import NIOSSL

/// What a gateway serves: where it listens, its database, its apps with their APNs credentials,
/// and the API keys that may use them.
///
/// Read it from a JSON file with ``load(file:environment:)``, or build it in code. Secrets never
/// sit in the file: auth keys and certificates are files, passwords come from the environment,
/// and API keys are stored only as their SHA-256.
public struct GatewayConfiguration: Sendable {
    /// One app: the bundle ID it sends to and how it reaches APNs, and how it reaches browsers.
    /// An app has APNs credentials, Web Push settings, or both.
    public struct App: Sendable {
        /// The app's ID in the API's paths (`/v1/apps/{id}/…`): 1 to 64 of `a-z 0-9 . _ -`.
        public var id: String
        /// The app's bundle ID: `apns-topic` for alerts; other push types add their suffix.
        /// `nil` for an app that reaches browsers only (no APNs ``credentials``).
        public var topic: String?
        /// Where the app's devices are sent by default: Apple's production or sandbox host, or
        /// another (a mock), which counts as production.
        public var environment: APNSEnvironment
        /// Where devices registered in an environment are sent, when not Apple's host for it
        /// (mocks and tests): `environments` in the file. The app's ``environment`` serves its
        /// own environment unless this names another host for it.
        public var environments: [TokenEnvironment: APNSEnvironment] = [:]
        /// The app's credential: it serves every token kind not in ``credentialsByKind``. `nil`
        /// for an app that reaches browsers only: its APNs tokens are refused when registered, and
        /// any it has from before fail with `APNsNotConfigured` when sent to.
        public var credentials: APNSCredentials?
        /// Credentials for some token kinds (a VoIP certificate): `credentialsByKind` in the file.
        public var credentialsByKind: [TokenKind: APNSCredentials] = [:]
        /// A credential per token environment, over ``credentials`` for that environment's devices:
        /// `credentialsByEnvironment` in the file. Apple's keys may be scoped to the sandbox or to
        /// production since February 2025 ("Token-based connection to APNs" in Apple's
        /// documentation), and a connection keeps the scope of its first request: each client is
        /// one environment's and one credential's.
        public var credentialsByEnvironment: [TokenEnvironment: APNSCredentials] = [:]
        /// Whether ``credentials`` serves the environments ``credentialsByEnvironment`` does not
        /// name. False when the file gives credentials per environment only: a device of an
        /// environment without one then fails with `APNsEnvironmentNotConfigured`.
        public var credentialsServeEveryEnvironment = true
        /// The CAs trusted for APNs's certificate (a mock's CA with `caFile`).
        public var trustRoots: APNSClient.TrustRoots = .system
        /// HTTP/2 connections to APNs. Default 4.
        public var connections = 4
        /// How the app reaches each platform other than APNs, by platform: each platform's own
        /// settings (``GatewayPlatform/configurationKey`` in the file). Read through ``webPush``
        /// and ``fcm``.
        var platformSettings: [DevicePlatform: any Sendable] = [:]
        /// How the app reaches browsers (Web Push); `nil`: it has none (`webPush` in the file).
        public var webPush: WebPushSettings? {
            get { platformSettings[.webpush] as? WebPushSettings }
            set { platformSettings[.webpush] = newValue }
        }
        /// How the app reaches Android devices (FCM); `nil`: it has none (`fcm` in the file).
        public var fcm: FCMSettings? {
            get { platformSettings[.fcm] as? FCMSettings }
            set { platformSettings[.fcm] = newValue }
        }
        /// The time zone of devices registered without one: local-time sends and quiet hours go
        /// by it. An IANA name; default `UTC`.
        public var defaultTimeZone = "UTC"
        /// The app's kinds of notification (`categories` in the file): a notification names one,
        /// and users' preferences and the category's frequency caps decide who gets it.
        public var categories: [String: NotificationCategory] = [:]
        /// The language of devices that registered none, when a template has it (`defaultLanguage`
        /// in the file, a BCP 47 tag); `nil`: each template's own default.
        public var defaultLanguage: String?
        /// Whether its deliveries carry receipts, and for how long they are taken (`receipts`).
        public var receipts = ReceiptSettings()
        /// Hours of each device's day when a notification with `respectQuietHours` is held.
        public var quietHours: QuietHours?
        /// A ceiling on all the app's sending, shared by every worker and every process: each
        /// notification's devices are spread over a window reserved after the app's earlier
        /// ones (``DeliverySchedule/sharesAppPace``). `nil`: none.
        public var maximumRatePerSecond: Double?
        /// Where the app's events are POSTed (`webhooks` in the file); none by default.
        public var webhooks: [Webhook] = []
        /// Which Matrix pushers are the app's devices (`matrix` in the file, docs/matrix.md); `nil`: none.
        public var matrix: MatrixSettings?
        /// How many days each platform's devices may go without registering again before the
        /// gateway retires them as `Stale` (`staleDeviceDays` in the file; 0: never). By default
        /// 270 for FCM, whose registration tokens stop working after 270 days inactive
        /// (https://firebase.google.com/docs/cloud-messaging/manage-tokens), and never for the
        /// others.
        public var staleDeviceDays: [DevicePlatform: Int] = [.fcm: 270]
        /// Where the app is defined: the configuration (its file, or code) or the admin API.
        public internal(set) var source: AppSource = .file
        /// The file gave the app's APNs settings at its top level, not in `apns`.
        var givesAPNSAtTopLevel = false
        /// A digest of what the app was read from (``AppRevision``): a reload keeps the app's
        /// clients and connections when it is unchanged. `nil` for an app made in code, which a
        /// reload always rebuilds.
        public var revision: String?

        public init(id: String, topic: String, environment: APNSEnvironment, credentials: APNSCredentials) {
            self.id = id
            self.topic = topic
            self.environment = environment
            self.credentials = credentials
        }

        /// An app that reaches browsers only: no APNs topic or credentials.
        public init(id: String, webPush: WebPushSettings) {
            self.id = id
            self.environment = .production
            self.webPush = webPush
        }

        /// An app without APNs: it reaches browsers and/or Android devices (set ``webPush`` and
        /// ``fcm``).
        public init(id: String) {
            self.id = id
            self.environment = .production
        }

        /// The app's bundle ID if it can send to APNs (it has a topic and a credential).
        public var apnsTopic: String? { credentials == nil ? nil : topic }

        /// What the app reaches: APNs, browsers, Android devices.
        public var platforms: Set<DevicePlatform> {
            Set(GatewayPlatforms.all.filter { $0.reaches(self) }.map { $0.platform })
        }

        /// The environment of a device registered without one: sandbox when the app's
        /// ``environment`` is Apple's sandbox, production otherwise.
        public var defaultEnvironment: TokenEnvironment { environment.kind == .sandbox ? .sandbox : .production }

        /// The credential that serves `kind`, if the app has APNs.
        public func credentials(for kind: TokenKind) -> APNSCredentials? { credentialsByKind[kind] ?? credentials }

        /// The credential that serves the app's devices of `environment` (each kind without one
        /// of its own): its ``credentialsByEnvironment`` entry, else the app's ``credentials``
        /// unless those serve named environments only.
        public func credentials(for environment: TokenEnvironment) -> APNSCredentials? {
            credentialsByEnvironment[environment] ?? (credentialsServeEveryEnvironment ? credentials : nil)
        }

        /// Which credential the app sends with, as the start-up log names it: a provider key by
        /// its key and team IDs, a certificate by its subject and expiry. Never a secret.
        public var credentialDescription: String { credentials.map(Self.describe) ?? "none (browsers only)" }

        /// A credential as logs name it. Never a secret.
        public static func describe(_ credentials: APNSCredentials) -> String {
            switch credentials {
            case .providerToken(let key): "provider key \(key.keyID) of team \(key.teamID)"
            case .providerTokens: "provider tokens from an issuer"
            case .certificate(let identity):
                "certificate '\(identity.subjectDescription)', valid until \(identity.notValidAfter.formatted(.iso8601.year().month().day()))"
            }
        }

        /// Where a device of `tokenEnvironment` is sent (apns-spec §1.1).
        public func host(for tokenEnvironment: TokenEnvironment) -> APNSEnvironment {
            if let host = environments[tokenEnvironment] { return host }
            if tokenEnvironment == defaultEnvironment { return environment }
            return tokenEnvironment == .sandbox ? .sandbox : .production
        }

        /// Where the app's broadcast channels of an environment are managed (apns-spec §1.9):
        /// Apple's channel-management host for Apple's push host, or the same host for any other
        /// (Herald's mock serves both).
        public func channelManagementHost(for tokenEnvironment: TokenEnvironment) -> APNSEnvironment {
            let push = host(for: tokenEnvironment)
            switch push.kind {
            case .production: return .channelManagementProduction
            case .sandbox: return .channelManagementSandbox
            case .custom: return push
            }
        }
    }

    /// An app's Web Push: the VAPID key and contact it signs with, and where a browser's
    /// notification opens when the notification does not say.
    public struct WebPushSettings: Sendable {
        /// The application server key (`vapidKeyFile`): every subscription is bound to it.
        public var key: VAPIDKey
        /// The VAPID `sub`: `mailto:` or `https:` (Apple requires one).
        public var subject: String
        /// The https URL a browser opens when its notification is clicked (WebKit's declarative
        /// `navigate`), unless the notification names one.
        public var defaultURL: String
        /// CAs trusted besides the system's (`caFile`: a mock's).
        public var trustRoots: [NIOSSLCertificate] = []
        /// Accept `http:` endpoints on loopback (`allowLoopbackHTTP`: tests only).
        public var allowsLoopbackHTTP = false
        /// Push-service hosts accepted beside the browsers' own (`allowedHosts`): a UnifiedPush
        /// distributor such as a self-hosted ntfy. `.example.net` or `*.example.net` allows
        /// every name under a domain.
        public var allowedHosts: [String] = []
        /// Accept endpoints at, and connect to, loopback and private-network addresses
        /// (`allowPrivateAddresses`): tests against a mock, or a push service on the operator's
        /// own network. Off: a subscription cannot make the gateway send into its own network.
        public var allowsPrivateAddresses = false

        public init(key: VAPIDKey, subject: String, defaultURL: String) {
            self.key = key
            self.subject = subject
            self.defaultURL = defaultURL
        }

        /// Which endpoints the app's browsers may have, at registration, delivery and connect.
        public var policy: WebPushSubscription.Policy {
            WebPushSubscription.Policy(allowsLoopbackHTTP: allowsLoopbackHTTP, allowedHosts: allowedHosts, allowsPrivateAddresses: allowsPrivateAddresses)
        }
    }

    /// An app's Firebase Cloud Messaging: the service account it sends as, and where FCM is.
    public struct FCMSettings: Sendable {
        /// The service account (`serviceAccountFile`): its key signs the OAuth assertion, its
        /// `token_uri` is where access tokens come from, its `project_id` the project sent for.
        public var serviceAccount: FCMServiceAccount
        /// FCM's origin: Google's, or a mock's (`endpoint`).
        public var endpoint: String = FCMClient.googleEndpoint
        /// CAs trusted besides the system's, for the endpoint and the token URI alike (`caFile`: a mock's).
        public var trustRoots: [NIOSSLCertificate] = []
        /// HTTP/2 connections to FCM. Default 4.
        public var connections = 4

        public init(serviceAccount: FCMServiceAccount) {
            self.serviceAccount = serviceAccount
        }
    }

    /// Where the API listens.
    public var listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 8080)
    /// `sqlite:PATH` (relative paths are relative to the working directory) or `postgres://…`.
    public var database: StoreURL
    public var apps: [App] {
        didSet { appIndex = Self.index(apps) }
    }
    /// Each app's position in ``apps``, by ID: a gateway may serve thousands, and every batch
    /// and request looks its app up.
    private var appIndex: [String: Int]
    public var apiKeys: [APIKey]
    /// How the queue leases, retries and ages work; see ``HeraldStore/Configuration``.
    public var queue: QueueSettings = QueueSettings()
    /// How many delivery workers run and how many devices each claims at a time.
    public var workers: WorkerSettings = WorkerSettings()
    /// Bounds on what API clients can send.
    public var limits: APILimits = APILimits()
    /// How often the queue's gauges are refreshed and retention runs.
    public var housekeeping: HousekeepingSettings = HousekeepingSettings()
    /// When set, the API listener speaks HTTPS with this certificate (reloaded by
    /// ``HeraldGateway/reloadTLS()``). Default: plain HTTP, for a reverse proxy or loopback.
    public var tls: APITLSIdentity?
    /// How webhook events are sent (`webhookSender` in the file).
    public var webhookSender = WebhookSenderSettings()
    /// The keys that seal the apps defined through the admin API (`HERALD_CREDENTIALS_KEY`, or
    /// `credentialsKeyFile` in the file); `nil`: none, and the admin API defines no app. Read at
    /// start only.
    public var credentialsKeys: CredentialsKeys?

    /// Where an app is defined.
    public enum AppSource: String, Sendable, Hashable {
        /// The configuration file (or the code that made the configuration): it wins over the API.
        case file
        /// The admin API (`PUT /v1/admin/apps/{app}`), stored sealed in the database.
        case api
    }
    /// What `/metrics` labels (`metrics` in the file).
    public var metrics = MetricsSettings()

    /// One line for the log at start when the file gives apps' APNs settings in the form before
    /// `apps[].apns` (still read); `nil` when it does not.
    public var formNotice: String? {
        let flat = apps.filter(\.givesAPNSAtTopLevel).map(\.id)
        guard !flat.isEmpty else { return nil }
        return "app \(flat.joined(separator: ", ")) gives its APNs settings at the app's top level, which is still read; "
            + "the form now nests them as apps[].apns {topic, environment, authKey or certificate, …} beside webPush and fcm (docs/gateway.md)"
    }

    public init(database: StoreURL, apps: [App], apiKeys: [APIKey]) {
        self.database = database
        self.apps = apps
        self.apiKeys = apiKeys
        appIndex = Self.index(apps)
    }

    /// The app with this ID.
    public func app(_ id: String) -> App? { appIndex[id].map { apps[$0] } }

    /// The first position of each ID in `apps`.
    private static func index(_ apps: [App]) -> [String: Int] {
        var index: [String: Int] = [:]
        index.reserveCapacity(apps.count)
        for (position, app) in apps.enumerated() where index[app.id] == nil { index[app.id] = position }
        return index
    }

    /// The store's configuration for this gateway.
    public var storeConfiguration: HeraldStore.Configuration {
        var store = HeraldStore.Configuration(url: database)
        store.leaseDuration = queue.lease
        store.maximumAge = queue.maximumAge
        store.initialRetryDelay = queue.initialRetryDelay
        store.maximumRetryDelay = queue.maximumRetryDelay
        return store
    }
}

/// A host and port to listen on: `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:80`.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    /// 0 picks a free port.
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (IPv6 in brackets).
    public init(parsing text: String) throws(FieldError) {
        let usage = "must be HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080, got \(String(reflecting: PeerText(text, limit: 80).description))"
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw FieldError("", usage)
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains("/"), !host.contains(" ") else { throw FieldError("", usage) }
        self.init(host: host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// How the gateway's queue leases, retries and ages notifications.
public struct QueueSettings: Sendable, Hashable {
    /// How long a claim lasts before its devices go back to the queue (a killed worker's work is
    /// taken over after this). Default 60 s.
    public var lease = HeraldStore.Configuration.Defaults.leaseDuration
    /// How long a notification without `expiration` is retried. Default 24 hours.
    public var maximumAge = HeraldStore.Configuration.Defaults.maximumAge
    /// The first retry's delay, doubling to ``maximumRetryDelay``. Default 5 s.
    public var initialRetryDelay = HeraldStore.Configuration.Defaults.initialRetryDelay
    /// Default 10 minutes.
    public var maximumRetryDelay = HeraldStore.Configuration.Defaults.maximumRetryDelay
    /// Finished notifications and their outcomes are deleted after this. Default 7 days.
    public var retention: Duration = .seconds(7 * 24 * 3600)

    public init() {}
}

/// How many delivery workers a gateway runs.
/// What `GET /metrics` shows per app.
public struct MetricsSettings: Sendable, Hashable {
    /// How many apps get a series of their own (`maximumAppLabels` in the file): the first to
    /// send, each under its ID; every app after them is counted under `app="_other"`, so the
    /// exposition stays bounded with thousands of apps. 0: every app under `_other`. Default 100.
    public var maximumAppLabels = 100

    public init() {}
}

public struct WorkerSettings: Sendable, Hashable {
    /// Workers claiming from the queue in this process. Worker 0 takes only single deliveries
    /// (token and user audiences), so they never wait behind a broadcast. Default 4.
    public var count = 4
    /// Devices one claim takes; `nil` (the default): the database's own,
    /// ``defaultBatchSize(for:)``. Each batch costs its claim and completion statements and a
    /// pause in sending while its last answers come in, so larger batches broadcast faster
    /// (docs/performance.md, "Measurements behind the code").
    public var batchSize: Int?

    /// 5,000 on SQLite, 10,000 on PostgreSQL. PostgreSQL plans each of a batch's statements and
    /// answers it over a socket, so larger batches cost it less CPU a device; SQLite costs little
    /// a statement, and its page cache is the gateway's own memory, which larger batches grow
    /// (docs/performance.md, "Measurements behind the code").
    public static func defaultBatchSize(for database: StoreURL) -> Int {
        switch database {
        case .sqlite: 5000
        case .postgres: 10_000
        }
    }

    /// The batch size the workers use on `database`: ``batchSize``, or the database's default.
    public func batchSize(on database: StoreURL) -> Int {
        batchSize ?? Self.defaultBatchSize(for: database)
    }
    /// On graceful shutdown (SIGTERM), how long batches in flight may take to finish; what is
    /// still unanswered then goes back to the queue, and the process exits within
    /// ``shutdownMargin`` more. Default 20 s.
    public var shutdownGrace: Duration = .seconds(20)
    /// After ``shutdownGrace``, the time to give back or record what the workers held and to
    /// close the connections, after which what is left is cancelled.
    public static let shutdownMargin: Duration = .seconds(5)
    /// How long an app's client to a push service may go unused before it is closed, with its
    /// connections (`idleClientSeconds` in the file). Clients are made when an app first sends,
    /// so a gateway with thousands of quiet apps holds no connection for them. Default 300 s.
    public var idleClientTimeout: Duration = .seconds(300)

    public init() {}
}

/// Bounds on what API clients can send.
public struct APILimits: Sendable, Hashable {
    /// The largest JSON body of a single request (a notification, a device). Default 1 MiB.
    public var maximumBodySize = 1 << 20
    /// The longest line (NDJSON) or element (JSON array) of a bulk import. Default 64 KiB.
    public var maximumImportLineSize = 64 << 10
    /// Errors listed in a bulk import's answer (the count covers all of them). Default 100.
    public var maximumImportErrors = 100
    /// Tokens or users one notification may name. Default 10,000.
    public var maximumAudienceSize = 10_000
    /// Connections the API keeps open at once. Default 512.
    public var maximumConnections = 512
    /// Connections one client address may hold open at once, so that one client cannot take
    /// all of ``maximumConnections``. Default 64.
    public var maximumConnectionsPerAddress = 64
    /// How long a request's head may take to arrive whole, counted from the connection's
    /// opening or the previous answer (an idle keep-alive connection is closed then too).
    /// Default 30 s, at most 30 s.
    public var requestHeadTimeout: Duration = .seconds(30)
    /// The slowest a request body may arrive, in bytes a second (measured over 5 s windows,
    /// after the first). Default 1,024.
    public var minimumBodyRate = 1024
    /// The largest body of one bulk import (`POST …/devices`), in bytes. Default 2 GiB (about
    /// 15 million devices of ~130 bytes); past it the devices read so far are registered and the
    /// answer is 413, saying how many.
    public var maximumImportSize = 2 << 30
    /// Deliveries an app may have pending (queued, or being retried) before a new notification
    /// for it is refused with 429: one tenant cannot fill the queue for the others. Counted from
    /// the database every `housekeeping.statisticsInterval` and by each notification queued in
    /// between. Default 20,000,000.
    public var maximumPendingPerApp = 20_000_000
    /// Requests one API key may make per second, on average, in each process. Default 1,000.
    public var requestsPerSecondPerKey = 1000
    /// Requests one API key may make at once above that rate. Default 2,000.
    public var requestBurstPerKey = 2000
    /// Receipts one client address may report per second, on average, to `POST /v1/receipts`
    /// (IPv6: per /64), in each process: a flood from one address takes a bounded share of the
    /// gateway. Default 2,000 (a carrier's NAT puts many phones behind one address).
    public var receiptsPerSecondPerAddress = 2000
    /// Receipts one address may report at once above that rate. Default 10,000.
    public var receiptBurstPerAddress = 10_000
    /// How far ahead a notification's `sendAt` may be. Default 30 days.
    public var maximumScheduleAhead: Duration = .seconds(30 * 24 * 3600)

    public init() {}
}

extension StoreURL {
    /// A PostgreSQL URL without a password takes `PGPASSWORD` from `environment` (as libpq
    /// does), so the password need not sit in a file or on a command line.
    public func withPassword(from environment: [String: String]) -> StoreURL {
        guard case .postgres(var postgres) = self, postgres.password == nil, let password = environment["PGPASSWORD"] else { return self }
        postgres.password = password
        return .postgres(postgres)
    }
}
