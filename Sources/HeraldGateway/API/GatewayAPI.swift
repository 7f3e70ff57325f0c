import HeraldCore
import HeraldStore
import Hummingbird
import Logging
import NIOCore

/// The gateway's HTTP API: routes over the store, described by `openapi.json`.
///
/// Routes are thin: decode, authorise, call the store, encode. `/healthz`, `/readyz`, `/metrics`,
/// `/openapi.json` and the console's files (`/console`) need no key; everything under `/v1` does
/// (the console asks for one and calls `/v1` with it).
public struct GatewayAPI: Sendable {
    /// The apps, API keys and clients in force (a reload replaces them).
    let live: LiveConfiguration
    let store: HeraldStore
    let metrics: GatewayMetrics
    let limiter: RateLimiter
    let backlog: AppBacklog
    /// The file's and the admin API's apps, which the admin routes change.
    let sources: AppSources?
    /// Each app's receipt keys, for checking receipts.
    let receiptKeys: ReceiptKeyring
    /// Checks and stores receipts, many requests' at once.
    let receipts: ReceiptIngester
    /// Receipts per client address.
    let receiptThrottle: ReceiptThrottle

    init(live: LiveConfiguration, store: HeraldStore, metrics: GatewayMetrics, sources: AppSources? = nil) {
        self.live = live
        self.store = store
        self.metrics = metrics
        self.sources = sources
        let configuration = live.configuration
        backlog = AppBacklog()
        limiter = RateLimiter(requestsPerSecond: configuration.limits.requestsPerSecondPerKey, burst: configuration.limits.requestBurstPerKey)
        receiptKeys = ReceiptKeyring(store: store)
        receipts = ReceiptIngester(store: store, live: live, keyring: receiptKeys, metrics: metrics, logger: Logger(label: "herald.receipts"))
        receiptThrottle = ReceiptThrottle(perSecond: configuration.limits.receiptsPerSecondPerAddress, burst: configuration.limits.receiptBurstPerAddress)
    }

    /// The router: the whole API, or (`includesV1` false, for a workers-only process) only the
    /// probes, metrics and document.
    public func router(includesV1: Bool = true) -> Router<GatewayContext> {
        let router = Router(context: GatewayContext.self)
        router.add(middleware: ResponseMiddleware(metrics: metrics))
        router.add(middleware: InputScreenMiddleware())
        ProbeRoutes(api: self).add(to: router)
        if includesV1 {
            ConsoleRoutes().add(to: router)
            // Public: devices report with their receipt alone, and pages load the kit.
            ReceiptRoutes(api: self, ingester: receipts, throttle: receiptThrottle).add(to: router)
            SDKRoutes().add(to: router)
            let v1 = router.group("v1").add(middleware: AuthenticationMiddleware(live: live, limiter: limiter))
            AppRoutes(api: self).add(to: v1)
            DeviceRoutes(api: self).add(to: v1)
            NotificationRoutes(api: self).add(to: v1)
            ActivityRoutes(api: self).add(to: v1)
            ChannelRoutes(api: self).add(to: v1)
            TemplateRoutes(api: self).add(to: v1)
            PreferenceRoutes(api: self).add(to: v1)
            WebPushRoutes(api: self).add(to: v1)
            AdminRoutes(api: self).add(to: v1)
            FunnelRoutes(api: self, keyring: receiptKeys).add(to: v1)
            // The Matrix Push Gateway API: no key (homeservers send none), its own error shape.
            MatrixRoutes(api: self).add(to: router)
        }
        return router
    }

    /// The configuration in force: the apps and keys of the last reload.
    var configuration: GatewayConfiguration { live.configuration }

    /// The app named in the path, if the request's key may use it.
    /// Where `app`'s devices registered without an environment are sent.
    func defaultEnvironment(of app: String) -> TokenEnvironment {
        configuration.app(app)?.defaultEnvironment ?? .production
    }

    func authorizedApp(_ context: GatewayContext) throws -> String {
        let app = try context.parameters.require("app")
        guard configuration.app(app) != nil else {
            throw APIError.notFound("no app '\(PeerText(app, limit: 64))' in this gateway's configuration")
        }
        guard context.apiKey?.apps.contains(app) == true else {
            throw APIError(.forbidden, "forbidden", "this API key may not use app \(app)")
        }
        return app
    }

    /// The app's APNs bundle ID, or a 409 `apnsNotConfigured` when the app reaches browsers only.
    func apnsTopic(of app: String) throws(APIError) -> String {
        guard let topic = configuration.app(app)?.apnsTopic else { throw APIError.apnsNotConfigured(app) }
        return topic
    }

    /// What `app` reaches: APNs (credentials), browsers (`webPush`), Android devices (`fcm`).
    func platforms(of app: String) -> Set<DevicePlatform> {
        guard let app = configuration.app(app) else { return [] }
        return app.platforms
    }

    /// A 409 unless `app` reaches `platform`: its devices could never be sent to.
    func checkReaches(_ app: String, _ platform: DevicePlatform) throws(APIError) {
        guard !platforms(of: app).contains(platform) else { return }
        throw GatewayPlatforms.conformance(of: platform).notConfigured(app)
    }

    /// `limit=`: 1 to 1000, default 100.
    static func limit(_ text: Substring?) throws(APIError) -> Int {
        try wholeNumber(text, "limit", in: 1...1000, default: 100)
    }

    /// A query parameter that is a whole number in `range` (digits only: no sign, no exponent).
    static func wholeNumber(_ text: Substring?, _ name: String, in range: ClosedRange<Int>, default value: Int) throws(APIError) -> Int {
        guard let text else { return value }
        guard text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let number = Int(text), range.contains(number) else {
            throw APIError.invalid("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// `cursor=`: a page's `next`, as given.
    static func cursor(_ text: Substring?) throws(APIError) -> String? {
        guard let text else { return nil }
        guard !text.isEmpty, text.utf8.count <= 512, PeerText.isSafe(text) else {
            throw APIError.invalid("cursor must be the next value of the previous page")
        }
        return String(text)
    }
}
