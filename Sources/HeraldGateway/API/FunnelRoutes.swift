import HTTPTypes
import HeraldCore
import HeraldStore
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How far notifications got (docs/receipts.md): a notification's funnel by platform, an app's
/// per day, the app's event stream to take away, and its receipt keys' rotation.
struct FunnelRoutes {
    let api: GatewayAPI
    let keyring: ReceiptKeyring

    /// The most days of an app's funnel one request reads.
    static let maximumDays = 31

    func add(to group: RouterGroup<GatewayContext>) {
        group.get("notifications/:id/funnel", use: notificationFunnel)
        group.get("apps/:app/funnel", use: appFunnel)
        group.get("apps/:app/events", use: events)
        group.post("apps/:app/receipts/rotate", use: rotate)
    }

    /// Targeted → accepted → received → opened, per platform and in all, with rates and the
    /// time from the send to each receipt.
    @Sendable func notificationFunnel(request: Request, context: GatewayContext) async throws -> Response {
        let notification = try await NotificationRoutes(api: api).authorizedNotification(context)
        let funnel = try await api.store.funnel(notification: notification.id)
        let counts = notification.counts
        return JSONBody.object { writer in
            writer.member("notification", notification.id)
            writer.member("targeted", counts.targeted)
            var total = FunnelStages()
            writer.key("platforms")
            writer.beginArray()
            for platform in DevicePlatform.allCases {
                var stages = funnel.byPlatform[platform] ?? FunnelStages()
                let sent = platform == .apns ? counts.apns : counts.byPlatform[platform] ?? PlatformCounts()
                stages.accepted = max(0, sent.accepted)
                stages.sent = max(0, sent.accepted) + max(0, sent.rejected) + max(0, sent.failed)
                guard stages.sent > 0 || stages.received > 0 || stages.opened > 0 else { continue }
                total.sent += stages.sent
                total.accepted += stages.accepted
                total.received += stages.received
                total.opened += stages.opened
                total.dismissed += stages.dismissed
                total.clicked += stages.clicked
                writer.beginObject()
                writer.member("platform", platform.rawValue)
                Self.write(stages, to: &writer)
                writer.endObject()
            }
            writer.endArray()
            writer.key("total")
            writer.beginObject()
            Self.write(total, to: &writer)
            writer.endObject()
        }
    }

    static func write(_ stages: FunnelStages, to writer: inout JSONWriter) {
        writer.member("sent", stages.sent)
        writer.member("accepted", stages.accepted)
        writer.member("received", stages.received)
        writer.member("opened", stages.opened)
        writer.member("dismissed", stages.dismissed)
        writer.member("clicked", stages.clicked)
        writer.key("rates")
        writer.beginObject()
        // Each stage of the one before it; null when the one before is 0.
        for (name, part, whole) in [("accepted", stages.accepted, stages.sent), ("received", stages.received, stages.accepted), ("opened", stages.opened, stages.accepted)] {
            writer.key(name)
            if whole > 0 { writer.double((Double(part) / Double(whole) * 10_000).rounded() / 10_000) } else { writer.null() }
        }
        writer.endObject()
        for (name, latency) in [("timeToReceivedMs", stages.receivedLatency), ("timeToOpenedMs", stages.openedLatency)] {
            writer.key(name)
            if let latency {
                writer.beginObject()
                writer.member("p50", latency.p50)
                writer.member("p95", latency.p95)
                writer.endObject()
            } else {
                writer.null()
            }
        }
    }

    /// The app's notifications queued each day (UTC), and how far they got: `days=` 1 to 31, default 7.
    @Sendable func appFunnel(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let days = try GatewayAPI.wholeNumber(request.uri.queryParameters["days"], "days", in: 1...Self.maximumDays, default: 7)
        let funnels = try await api.store.dailyFunnel(app: app, days: days)
        return JSONBody.object { writer in
            writer.member("app", app)
            writer.key("days")
            writer.beginArray()
            for day in funnels {
                writer.beginObject()
                writer.member("day", day.day)
                writer.member("notifications", day.notifications)
                writer.member("targeted", day.targeted)
                writer.member("accepted", day.accepted)
                writer.member("received", day.received)
                writer.member("opened", day.opened)
                writer.member("dismissed", day.dismissed)
                writer.member("clicked", day.clicked)
                writer.endObject()
            }
            writer.endArray()
        }
    }

    /// The app's events after `after=` (a line's `cursor`; none: from the oldest kept), at most
    /// `limit=` (1 to 10,000, default 1,000), as NDJSON: one `{"cursor", "type", "at", "data"}`
    /// a line. An empty body: nothing new yet.
    @Sendable func events(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let query = request.uri.queryParameters
        var cursor = EventCursor.start
        if let text = query["after"] {
            guard let parsed = EventCursor(text: text) else { throw APIError.invalid("after must be the cursor of an event line, as given") }
            cursor = parsed
        }
        let limit = try GatewayAPI.wholeNumber(query["limit"], "limit", in: 1...10_000, default: 1000)
        let events = try await api.store.events(app: app, after: cursor, limit: limit)
        var buffer = ByteBuffer()
        for event in events {
            var writer = JSONWriter(capacity: event.data.utf8.count + 96)
            writer.beginObject()
            writer.member("cursor", event.cursor)
            writer.member("type", event.type.rawValue)
            writer.member("at", JSONBody.time(event.at))
            writer.key("data")
            writer.rawJSON(event.data.utf8)
            writer.endObject()
            buffer.writeBytes(writer.bytes)
            buffer.writeInteger(UInt8(ascii: "\n"))
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/x-ndjson"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: buffer))
    }

    /// A new receipt key signs from now on; the one it replaces still verifies for
    /// `overlapSeconds` (default 7 days, at least 300: longer than any process keeps the old one).
    @Sendable func rotate(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let fields = try await JSONBody.optionalObject(of: request, limit: 1024)
        var overlap = 7 * 86_400
        if let fields {
            do throws(FieldError) {
                try fields.only(["overlapSeconds"])
                if let given = try fields.int("overlapSeconds") {
                    guard (ReceiptKeyring.minimumOverlapSeconds...(366 * 86_400)).contains(given) else {
                        throw FieldError(fields.at("overlapSeconds"), "must be \(ReceiptKeyring.minimumOverlapSeconds) to 31622400: longer than any gateway process keeps the old key (60 s)")
                    }
                    overlap = given
                }
            } catch {
                throw error.apiError
            }
        }
        let keys = try await api.store.rotateReceiptKey(app: app, overlap: TimeInterval(overlap))
        keyring.forget(app: app)
        return JSONBody.object { writer in
            writer.member("app", app)
            writer.key("keys")
            writer.beginArray()
            for key in keys {
                writer.beginObject()
                writer.member("slot", key.slot)
                writer.member("generation", key.generation)
                writer.member("createdAt", key.createdAt)
                writer.member("expiresAt", key.expiresAt)
                writer.endObject()
            }
            writer.endArray()
        }
    }
}
