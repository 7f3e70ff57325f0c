import HeraldCore
import HeraldStore
import Hummingbird

/// `/v1/apps…`: the apps a key may use, and what an operator looks at first for each (its
/// devices by status, kind and environment, its unfinished work, its deliveries per minute).
struct AppRoutes {
    let api: GatewayAPI

    func add(to group: RouterGroup<GatewayContext>) {
        group.get("apps", use: list)
        group.get("apps/:app/summary", use: summary)
        group.get("apps/:app/activity", use: activity)
    }

    /// The apps the request's key may use, in ID order.
    @Sendable func list(request: Request, context: GatewayContext) async throws -> Response {
        let allowed = context.apiKey?.apps ?? []
        let apps = api.configuration.apps.filter { allowed.contains($0.id) }.sorted { $0.id < $1.id }
        return JSONBody.object { writer in
            writer.key("apps")
            writer.beginArray()
            for app in apps {
                writer.beginObject()
                writer.member("id", app.id)
                writer.member("topic", app.topic)
                writer.member("environment", app.defaultEnvironment.rawValue)
                // What the app reaches: APNs, browsers (Web Push), Android devices (FCM).
                writer.key("platforms")
                writer.beginArray()
                let platforms = app.platforms
                for platform in DevicePlatform.allCases where platforms.contains(platform) { writer.string(platform.rawValue) }
                writer.endArray()
                writer.endObject()
            }
            writer.endArray()
        }
    }

    /// Devices counted by status, kind and environment (every status and environment named,
    /// kinds only where there are some), and the app's unfinished work.
    @Sendable func summary(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let defaultEnvironment = api.defaultEnvironment(of: app)
        async let counts = api.store.deviceCounts(app: app)
        async let queue = api.store.queue(app: app)
        var byStatus = Dictionary(uniqueKeysWithValues: DeviceStatus.allCases.map { ($0, 0) })
        var byKind: [TokenKind: Int] = [:]
        var byEnvironment = Dictionary(uniqueKeysWithValues: TokenEnvironment.allCases.map { ($0, 0) })
        var byPlatform = Dictionary(uniqueKeysWithValues: DevicePlatform.allCases.map { ($0, 0) })
        var total = 0
        for count in try await counts {
            total += count.count
            byStatus[count.status, default: 0] += count.count
            byPlatform[count.platform, default: 0] += count.count
            // Kinds and environments are APNs's: browsers are counted by platform only.
            guard count.platform == .apns else { continue }
            byKind[count.kind, default: 0] += count.count
            byEnvironment[count.environment ?? defaultEnvironment, default: 0] += count.count
        }
        let pending = try await queue
        return JSONBody.object { writer in
            writer.member("app", app)
            writer.key("devices")
            writer.beginObject()
            writer.member("total", total)
            writer.key("byStatus")
            writer.beginObject()
            for status in DeviceStatus.allCases { writer.member(status.rawValue, byStatus[status] ?? 0) }
            writer.endObject()
            writer.key("byKind")
            writer.beginObject()
            for kind in TokenKind.allCases where byKind[kind] != nil { writer.member(kind.rawValue, byKind[kind]!) }
            writer.endObject()
            writer.key("byEnvironment")
            writer.beginObject()
            for environment in TokenEnvironment.allCases { writer.member(environment.rawValue, byEnvironment[environment] ?? 0) }
            writer.endObject()
            writer.key("byPlatform")
            writer.beginObject()
            for platform in DevicePlatform.allCases { writer.member(platform.rawValue, byPlatform[platform] ?? 0) }
            writer.endObject()
            writer.endObject()
            writer.key("queue")
            writer.beginObject()
            writer.member("pendingDeliveries", pending.pendingDeliveries)
            writer.member("activeNotifications", pending.activeNotifications)
            writer.endObject()
        }
    }

    /// Deliveries ended per minute, `minutes=` (1 to 1440, default 60) of them up to now, oldest first.
    @Sendable func activity(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let minutes = try GatewayAPI.wholeNumber(request.uri.queryParameters["minutes"], "minutes", in: 1...1440, default: 60)
        let activity = try await api.store.activity(app: app, minutes: minutes)
        return JSONBody.object { writer in
            writer.member("app", app)
            writer.key("minutes")
            writer.beginArray()
            for minute in activity {
                writer.beginObject()
                writer.member("at", minute.start)
                writer.member("accepted", minute.accepted)
                writer.member("rejected", minute.rejected)
                writer.member("failed", minute.failed)
                writer.endObject()
            }
            writer.endArray()
        }
    }
}
