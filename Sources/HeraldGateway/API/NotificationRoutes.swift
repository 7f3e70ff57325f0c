import HeraldCore
import HeraldStore
import HTTPTypes
import Hummingbird

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `/v1/apps/{app}/notifications` and `/v1/notifications/{id}…`: queue a notification, follow it,
/// list how each device ended, cancel it.
struct NotificationRoutes {
    let api: GatewayAPI

    func add(to group: RouterGroup<GatewayContext>) {
        group.post("apps/:app/notifications", use: send)
        group.get("apps/:app/notifications", use: list)
        group.get("notifications/:id", use: read)
        group.get("notifications/:id/deliveries", use: deliveries)
        group.delete("notifications/:id", use: cancel)
    }

    @Sendable func send(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let app = api.configuration.app(appID)!
        try Self.checkBacklog(of: appID, api: api)
        let fields = try await JSONBody.object(of: request, limit: api.configuration.limits.maximumBodySize)
        var notificationRequest = try NotificationBody.parse(fields, app: app, limits: api.configuration.limits)
        if let content = try Self.content(fields, app: app, audience: notificationRequest.audience) {
            notificationRequest.content = try await content.content(of: notificationRequest, app: app, store: api.store)
        }
        return try await Self.queue(notificationRequest, api: api, context: context)
    }

    /// The body's content fields (``NotificationContentBody``), as the API's errors.
    private static func content(_ fields: JSONFields, app: GatewayConfiguration.App, audience: Audience) throws(APIError) -> NotificationContentBody? {
        do {
            return try NotificationContentBody.parse(fields, app: app, audience: audience)
        } catch {
            throw error.apiError
        }
    }

    /// 429 while the app has as many deliveries pending as it may.
    static func checkBacklog(of appID: String, api: GatewayAPI) throws {
        let pending = api.backlog.pending(appID)
        guard pending < api.configuration.limits.maximumPendingPerApp else {
            throw APIError.tooManyRequests(
                "app \(appID) has \(pending) deliveries pending, limits.maximumPendingPerApp is \(api.configuration.limits.maximumPendingPerApp); retry once the queue drains",
                retryAfter: 10
            )
        }
    }

    /// Stores a notification (or a Live Activity push) and answers 202 with its ID, or with the
    /// one stored first under its idempotency key.
    static func queue(_ notificationRequest: NotificationRequest, api: GatewayAPI, context: GatewayContext, now: Date = Date()) async throws -> Response {
        let appID = notificationRequest.app
        // Answered only once the notification is durably stored: from here it is delivered at
        // least once, whatever happens to this process.
        let (notification, created) = try await api.store.enqueue(notificationRequest, now: now)
        if created {
            api.metrics.recordEnqueued()
            api.backlog.add(notification.counts.pending, app: appID)
        }
        context.logger.debug("queued", metadata: ["notification": "\(notification.id)", "app": "\(appID)", "targeted": "\(notification.counts.targeted)"])
        var response = JSONBody.object(.accepted) { writer in
            writer.member("id", notification.id)
            writer.member("status", notification.status.rawValue)
            writer.member("targeted", notification.counts.targeted)
            writeTargetedByKind(notification, to: &writer)
        }
        if !created { response.headers[HTTPField.Name("Idempotent-Replayed")!] = "true" }
        response.headers[.location] = "/v1/notifications/\(notification.id)"
        return response
    }

    @Sendable func read(request: Request, context: GatewayContext) async throws -> Response {
        let notification = try await authorizedNotification(context)
        let receipts = try await api.store.receiptCounts(notification: notification.id)
        return JSONBody.object { writer in
            Self.write(notification, to: &writer)
            Self.writeReceipts(receipts, to: &writer)
        }
    }

    /// What its devices reported (`POST /v1/receipts`), each device, event and action once.
    static func writeReceipts(_ counts: ReceiptCounts, to writer: inout JSONWriter) {
        writer.key("receipts")
        writer.beginObject()
        for event in ReceiptEvent.allCases { writer.member(event.rawValue, counts.total(event)) }
        writer.endObject()
    }

    /// An app's notifications, newest first, a page at a time, optionally by status.
    @Sendable func list(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let query = request.uri.queryParameters
        var status: NotificationStatus?
        if let text = query["status"] {
            guard let parsed = NotificationStatus(rawValue: String(text)) else {
                throw APIError.invalid("status must be queued, scheduled, sending, done or cancelled")
            }
            status = parsed
        }
        let page = try await api.store.notifications(
            app: appID, status: status, limit: try GatewayAPI.limit(query["limit"]), after: try GatewayAPI.cursor(query["cursor"])
        )
        return JSONBody.object { writer in
            writer.key("notifications")
            writer.beginArray()
            for notification in page.items {
                writer.beginObject()
                Self.write(notification, to: &writer)
                writer.endObject()
            }
            writer.endArray()
            writer.member("next", page.next)
        }
    }

    @Sendable func deliveries(request: Request, context: GatewayContext) async throws -> Response {
        let notification = try await authorizedNotification(context)
        let query = request.uri.queryParameters
        var outcome: DeliveryRecord.Outcome?
        if let text = query["outcome"] {
            guard let parsed = DeliveryRecord.Outcome(rawValue: String(text)) else {
                throw APIError.invalid("outcome must be one of \(DeliveryRecord.Outcome.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            outcome = parsed
        }
        let page = try await api.store.deliveries(
            notificationID: notification.id, outcome: outcome, limit: try GatewayAPI.limit(query["limit"]), after: try GatewayAPI.cursor(query["cursor"])
        )
        return JSONBody.object { writer in
            writer.key("deliveries")
            writer.beginArray()
            for record in page.items {
                writer.beginObject()
                writer.member("token", record.token)
                writer.member("outcome", record.outcome.rawValue)
                writer.member("reason", record.reason)
                writer.member("receipt", record.receipt)
                // The receipt's name before Web Push and FCM: kept for existing callers.
                writer.member("apnsID", record.receipt)
                // APNs's apns-unique-id, where it gave one (its development environment).
                if let uniqueID = record.uniqueID { writer.member("apnsUniqueID", uniqueID) }
                writer.member("at", record.at)
                writer.endObject()
            }
            writer.endArray()
            writer.member("next", page.next)
        }
    }

    @Sendable func cancel(request: Request, context: GatewayContext) async throws -> Response {
        let notification = try await authorizedNotification(context)
        guard let cancelled = try await api.store.cancel(id: notification.id) else {
            throw APIError.notFound("no notification \(notification.id)")
        }
        context.logger.info("cancelled", metadata: ["notification": "\(cancelled.id)"])
        return JSONBody.object { Self.write(cancelled, to: &$0) }
    }

    /// The notification named in the path, if the key may see its app.
    func authorizedNotification(_ context: GatewayContext) async throws -> StoredNotification {
        let id = try context.parameters.require("id")
        guard let notification = try await api.store.notification(id: id) else {
            throw APIError.notFound("no notification \(PeerText(id, limit: 64))")
        }
        guard context.apiKey?.apps.contains(notification.request.app) == true else {
            throw APIError(.forbidden, "forbidden", "this API key may not use app \(notification.request.app)")
        }
        return notification
    }

    /// The devices targeted, by token kind: a push type reaches the app's tokens of one kind
    /// (``TokenKind/init(for:)``), never a token of another.
    static func writeTargetedByKind(_ notification: StoredNotification, to writer: inout JSONWriter) {
        writer.key("targetedByKind")
        writer.beginObject()
        if let kind = TokenKind(for: notification.request.pushType) { writer.member(kind.rawValue, notification.counts.targeted) }
        writer.endObject()
    }

    /// The most of an audience's tokens, users or tags a notification's JSON names: a list of
    /// a hundred notifications stays small whatever their audiences.
    static let audienceSample = 10

    /// Whom a notification was for: `type` (tokens, users, tags or all), how many it named, and
    /// the first ``audienceSample`` of them.
    static func writeAudience(_ audience: Audience, to writer: inout JSONWriter) {
        let (type, values): (String, [String]) = switch audience {
        case .tokens(let tokens): ("tokens", tokens)
        case .users(let users): ("users", users)
        case .tags(let tags): ("tags", tags)
        case .all: ("all", [])
        case .activity(let id): ("activity", [id])
        }
        writer.key("audience")
        writer.beginObject()
        writer.member("type", type)
        writer.member("count", values.count)
        writer.key("sample")
        writer.strings(Array(values.prefix(audienceSample)))
        writer.endObject()
    }

    static func write(_ notification: StoredNotification, to writer: inout JSONWriter) {
        let counts = notification.counts
        writer.member("id", notification.id)
        writer.member("app", notification.request.app)
        writer.member("status", notification.status.rawValue)
        writer.member("pushType", notification.request.pushType.rawValue)
        writeAudience(notification.request.audience, to: &writer)
        writer.member("targeted", counts.targeted)
        writeTargetedByKind(notification, to: &writer)
        writer.member("accepted", counts.accepted)
        writer.key("rejected")
        writer.beginObject()
        for reason in counts.rejected.keys.sorted() { writer.member(reason, counts.rejected[reason]!) }
        writer.endObject()
        writer.member("failed", counts.failed)
        // Devices not sent, by why: they opted out, were capped, or had it folded into a digest.
        for reason in SkipReason.allCases { writer.member(reason.rawValue, counts.skipped[reason] ?? 0) }
        writer.member("pending", counts.pending)
        // The same outcomes by platform: each platform's as counted, APNs's the rest.
        let apns = counts.apns
        writer.key("platforms")
        writer.beginObject()
        for platform in DevicePlatform.allCases {
            let platformCounts =
                platform == .apns
                ? PlatformCounts(accepted: max(0, apns.accepted), rejected: max(0, apns.rejected), failed: max(0, apns.failed))
                : counts.byPlatform[platform] ?? PlatformCounts()
            writer.key(platform.rawValue)
            writer.beginObject()
            writer.member("accepted", platformCounts.accepted)
            writer.member("rejected", platformCounts.rejected)
            writer.member("failed", platformCounts.failed)
            writer.endObject()
        }
        writer.endObject()
        if let schedule = notification.request.schedule { writeSchedule(schedule, to: &writer) }
        if let content = notification.request.content { writeContent(content, to: &writer) }
        writer.member("createdAt", notification.createdAt)
        writer.member("finishedAt", notification.finishedAt)
    }

    /// The notification's category, template (its name and the version it was queued with) and digest.
    static func writeContent(_ content: NotificationContent, to writer: inout JSONWriter) {
        if let category = content.category { writer.member("category", category) }
        if content.critical {
            writer.key("critical")
            writer.bool(true)
        }
        if let template = content.template {
            writer.key("template")
            writer.beginObject()
            writer.member("name", template.name)
            writer.member("version", template.version)
            writer.endObject()
        }
        if let digest = content.digest {
            writer.key("digest")
            writer.beginObject()
            writer.member("key", digest.key)
            writer.member("windowSeconds", digest.windowSeconds)
            if let item = digest.item { writer.member("item", item) }
            writer.endObject()
        }
    }

    /// When the notification's devices are sent, as the request asked it (and the app's ceiling).
    static func writeSchedule(_ schedule: DeliverySchedule, to writer: inout JSONWriter) {
        writer.key("schedule")
        writer.beginObject()
        writer.member("sendAt", schedule.sendAt)
        if let localTime = schedule.localTime { writer.member("sendAtLocalTime", localTime.description) }
        if schedule.quietHours != nil {
            writer.key("respectQuietHours")
            writer.bool(true)
        }
        if let rate = schedule.ratePerSecond {
            writer.key("ratePerSecond")
            writer.double(rate)
        }
        writer.endObject()
    }
}
