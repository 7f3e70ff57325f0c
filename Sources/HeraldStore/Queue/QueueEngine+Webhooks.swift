import HeraldCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The webhook outbox: events written in the transaction of the change they report (only for
/// the apps and event types some webhook wants, ``WebhookInterest``), then claimed by senders
/// under a lease, as deliveries are.
extension QueueEngine {
    /// A device of a notification that ended rejected or failed.
    struct FailedDevice {
        var token: String
        var state: DeliveryState
        var reason: String?
        var platform: DevicePlatform
    }

    /// Writes `delivery.failed` for each of `devices` (those rejected or failed) of notification `id`.
    func recordFailures(app: String, notification id: String, _ devices: [FailedDevice], now: Date, on connection: any SQLConnection) async throws {
        // The app's event stream: a `rejected` or `failed` line each.
        let lines: [(StreamEventType, String)] = devices.compactMap { device in
            guard device.state == .rejected || device.state == .failed else { return nil }
            return (device.state == .rejected ? .rejected : .failed, Self.eventData { writer in
                writer.key("notification")
                writer.string(id)
                writer.key("device")
                writer.string(device.token)
                writer.key("platform")
                writer.string(device.platform.rawValue)
                writer.key("reason")
                if let reason = device.reason { writer.string(reason) } else { writer.null() }
            })
        }
        try await appendEvents(app: app, lines, now: now, on: connection)
        let hooks = webhookInterest.hooks(app: app, event: .deliveryFailed)
        guard !hooks.isEmpty else { return }
        let events = devices.filter { $0.state == .rejected || $0.state == .failed }.map { device in
            event(.deliveryFailed, app: app, now: now) { writer in
                writer.key("notification")
                writer.string(id)
                writer.key("token")
                writer.string(device.token)
                writer.key("platform")
                writer.string(device.platform.rawValue)
                writer.key("outcome")
                writer.string(device.state == .rejected ? "rejected" : "failed")
                writer.key("reason")
                if let reason = device.reason { writer.string(reason) } else { writer.null() }
            }
        }
        try await write(events, type: .deliveryFailed, app: app, hooks: hooks, now: now, on: connection)
    }

    /// Writes `device.retired` for each device an invalidation retired (rows `[token, kind, platform]`
    /// its statement returned).
    func recordRetired(app: String, _ retired: [SQLRow], reports: [String: Invalidation], now: Date, on connection: any SQLConnection) async throws {
        let lines: [(StreamEventType, String)] = retired.compactMap { row in
            guard let token = row.text(0) else { return nil }
            return (.retired, Self.eventData { writer in
                writer.key("device")
                writer.string(token)
                writer.key("platform")
                writer.string(PlatformCode.platform(row.int(2)).rawValue)
                writer.key("reason")
                if let reason = reports[token]?.reason { writer.string(reason) } else { writer.null() }
            })
        }
        try await appendEvents(app: app, lines, now: now, on: connection)
        let hooks = webhookInterest.hooks(app: app, event: .deviceRetired)
        guard !hooks.isEmpty, !retired.isEmpty else { return }
        let events = retired.compactMap { row -> (id: String, body: String)? in
            guard let token = row.text(0), let report = reports[token] else { return nil }
            let status = Invalidation.status(for: report.reason)
            return event(.deviceRetired, app: app, now: now) { writer in
                writer.key("token")
                writer.string(token)
                writer.key("platform")
                writer.string(PlatformCode.platform(row.int(2)).rawValue)
                writer.key("kind")
                writer.string((KindCode(code: row.int(1)) ?? .alert).kind.rawValue)
                writer.key("status")
                writer.string(status == .unregistered ? "unregistered" : "invalid")
                writer.key("reason")
                writer.string(report.reason)
                // When APNs saw the token go (its 410's timestamp), for `Unregistered` and the like.
                if status == .unregistered, let timestamp = report.timestamp {
                    writer.key("timestamp")
                    writer.string(WebhookEventBody.time(timestamp))
                }
            }
        }
        try await write(events, type: .deviceRetired, app: app, hooks: hooks, now: now, on: connection)
    }

    /// Writes `notification.completed` for notification `id` of `app`, just finished.
    func recordCompleted(app: String, notification id: String, now: Date, on connection: any SQLConnection) async throws {
        let hooks = webhookInterest.hooks(app: app, event: .notificationCompleted)
        guard let counts = try await connection.query(sql.completedCounts, [.text(id)]).first else { return }
        try await appendEvents(app: app, [(.completed, Self.eventData { writer in
            writer.key("notification")
            writer.string(id)
            writer.key("targeted")
            writer.int(counts.int(0, default: 0))
            for (index, name) in ["accepted", "rejected", "failed", "optedOut", "capped", "digested"].enumerated() {
                writer.key(name)
                writer.int(counts.int(index + 1, default: 0))
            }
        })], now: now, on: connection)
        guard !hooks.isEmpty else { return }
        var reasons: [DeliveryState: [(String, Int)]] = [:]
        for row in try await connection.query(sql.failureCounts, [.text(id)]) {
            guard let state = DeliveryState(code: row.int(0)) else { continue }
            reasons[state, default: []].append((row.text(1) ?? "", row.int(2, default: 0)))
        }
        let completed = event(.notificationCompleted, app: app, now: now) { writer in
            writer.key("notification")
            writer.string(id)
            writer.key("status")
            writer.string("done")
            writer.key("targeted")
            writer.int(counts.int(0, default: 0))
            writer.key("counts")
            writer.beginObject()
            // Devices not sent (opted out, capped, digested) are counted here, never reported one by one.
            for (index, name) in ["accepted", "rejected", "failed", "optedOut", "capped", "digested"].enumerated() {
                writer.key(name)
                writer.int(counts.int(index + 1, default: 0))
            }
            writer.endObject()
            writer.key("reasons")
            writer.beginObject()
            for (state, name) in [(DeliveryState.rejected, "rejected"), (.failed, "failed")] {
                writer.key(name)
                writer.beginObject()
                for (reason, count) in (reasons[state] ?? []).sorted(by: { $0.0 < $1.0 }) {
                    writer.key(reason)
                    writer.int(count)
                }
                writer.endObject()
            }
            writer.endObject()
        }
        try await write([completed], type: .notificationCompleted, app: app, hooks: hooks, now: now, on: connection)
    }

    /// Writes `delivery.receipt` for each of `receipts` (just stored, of `app`), for the webhooks
    /// that want it.
    func recordReceiptWebhooks(app: String, _ receipts: [ReceiptRecord], latencies: [ReceiptRecord: Int64], now: Date, on connection: any SQLConnection) async throws {
        let hooks = webhookInterest.hooks(app: app, event: .deliveryReceipt)
        guard !hooks.isEmpty else { return }
        let events = receipts.map { receipt in
            event(.deliveryReceipt, app: app, now: now) { writer in
                for (key, value) in [
                    ("notification", receipt.notification), ("token", receipt.device), ("platform", receipt.platform.rawValue), ("event", receipt.event.rawValue),
                ] {
                    writer.key(key)
                    writer.string(value)
                }
                if !receipt.action.isEmpty {
                    writer.key("action")
                    writer.string(receipt.action)
                }
                writer.key("latencyMs")
                writer.int(Int(latencies[receipt] ?? 0))
            }
        }
        try await write(events, type: .deliveryReceipt, app: app, hooks: hooks, now: now, on: connection)
    }

    /// One `accepted` line per platform of a completed batch: its devices accepted, in one line
    /// (a broadcast's batch is thousands; a line each would cost the send a row each).
    func recordAccepted(app: String, notification id: String, _ tokens: [DevicePlatform: [String]], now: Date, on connection: any SQLConnection) async throws {
        let lines: [(StreamEventType, String)] = tokens.sorted { $0.key.code < $1.key.code }.map { platform, devices in
            (.accepted, Self.eventData(capacity: 64 + devices.count * 70) { writer in
                writer.key("notification")
                writer.string(id)
                writer.key("platform")
                writer.string(platform.rawValue)
                writer.key("count")
                writer.int(devices.count)
                writer.key("devices")
                writer.beginArray()
                for device in devices { writer.string(device) }
                writer.endArray()
            })
        }
        try await appendEvents(app: app, lines, now: now, on: connection)
    }

    /// An event line's `data` object, written by `body`.
    static func eventData(capacity: Int = 160, _ body: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter(capacity: capacity)
        writer.beginObject()
        body(&writer)
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    private func event(_ type: WebhookEventType, app: String, now: Date, data: (inout JSONWriter) -> Void) -> (id: String, body: String) {
        let id = WebhookEventBody.makeID()
        return (id, WebhookEventBody.write(id: id, type: type, app: app, now: now, data: data))
    }

    /// One row per event and webhook, for as many events as the app's outbox has room for
    /// (``WebhookInterest/maximumPending``); the others are counted as refused.
    private func write(
        _ events: [(id: String, body: String)], type: WebhookEventType, app: String, hooks: [String], now: Date, on connection: any SQLConnection
    ) async throws {
        guard !events.isEmpty else { return }
        let limit = webhookInterest.maximumPending
        let room = try await outbox.room(app: app, rows: events.count * hooks.count, limit: limit, now: now) {
            try await connection.query(sql.countAppWebhookEvents, [.text(app)]).first?.int(0, default: 0) ?? 0
        }
        let written = min(events.count, room / hooks.count)
        if written < events.count {
            let refused = events.count - written
            if outbox.refuse(app: app, type: type, count: refused, now: now) {
                logger.warning(
                    "the webhook outbox of this app is full: events are refused until its receivers take some (counted in herald_webhook_events_refused_total)",
                    metadata: ["app": "\(app)", "type": "\(type.rawValue)", "refused": "\(refused)", "maximumPending": "\(limit)"]
                )
            }
        }
        let rows: [[SQLValue]] = events.prefix(written).flatMap { event in hooks.map { [.text(event.id), .text($0), .code(WebhookTypeCode(type)), .text(event.body)] } }
        for part in Self.chunks(rows, of: 1000) { try await connection.query(sql.insertWebhookEvents, [.text(app), .int(now.milliseconds), .rows(Array(part))]) }
    }

    // MARK: Sending

    func claimWebhookEvents(owner: String, limit: Int, leaseUntil: Date, now: Date) async throws -> [WebhookDelivery] {
        try await database.write(.bookkeeping) { [self] connection in
            try await connection.query(sql.claimWebhookEvents, [.text(owner), .int(leaseUntil.milliseconds), .int(now.milliseconds), .int(limit)]).compactMap { row in
                typealias Column = WebhookEventColumn
                guard let id = row.text(Column.id), let hook = row.text(Column.hook), let app = row.text(Column.app),
                    let type = WebhookTypeCode(code: row.int(Column.type))
                else { return nil }
                return WebhookDelivery(
                    id: id, hook: hook, app: app, type: type.type, body: Array((row.text(Column.body) ?? "").utf8),
                    createdAt: Date(milliseconds: row.int(Column.createdAt) ?? 0), attempt: row.int(Column.attempts, default: 1)
                )
            }
        }
    }

    /// Deletes an event sent or given up on; `false` when `owner` no longer held it.
    func finishWebhookEvent(_ event: WebhookDelivery, owner: String) async throws -> Bool {
        try await database.write(.bookkeeping) { [self] connection in
            try await !connection.query(sql.deleteWebhookEvent, [.text(event.id), .text(event.hook), .text(owner)]).isEmpty
        }
    }

    /// Sends an event again at `at`; `false` when `owner` no longer held it.
    func retryWebhookEvent(_ event: WebhookDelivery, owner: String, at: Date, error: String) async throws -> Bool {
        try await database.write(.bookkeeping) { [self] connection in
            try await !connection.query(sql.retryWebhookEvent, [.text(event.id), .text(event.hook), .text(owner), .int(at.milliseconds), .text(error)]).isEmpty
        }
    }

    func pendingWebhookEvents() async throws -> [WebhookEventCount] {
        try await database.read { [self] connection in
            try await connection.query(sql.pendingWebhookEvents).compactMap { row in
                guard let app = row.text(0), let type = WebhookTypeCode(code: row.int(1)) else { return nil }
                return WebhookEventCount(app: app, type: type.type, count: row.int(2, default: 0))
            }
        }
    }
}

/// How full each app's webhook outbox is, as this process knows it: counted in the database
/// when first written to and again when a write would pass the bound (at most every
/// ``recountInterval``), plus the rows this process wrote since. Rows sent meanwhile are not
/// subtracted, so the figure only errs high, until the next count.
final class OutboxBudget: Sendable {
    private struct App {
        var pending = 0
        var countedAt: Date?
        var warnedAt: Date?
    }

    private struct State {
        var apps: [String: App] = [:]
        var refused: [WebhookEventCount] = []
    }

    private let state = Mutex(State())
    /// How often a full outbox is counted again (a statement over the app's rows).
    static let recountInterval: TimeInterval = 2
    /// How often a full outbox is logged (each refusal is counted).
    static let warningInterval: TimeInterval = 60

    /// How many of `rows` app's outbox takes now; they are counted as written. `count` counts
    /// the app's rows in the database.
    func room(app: String, rows: Int, limit: Int, now: Date, count: () async throws -> Int) async throws -> Int {
        let stale = state.withLock { state -> Bool in
            guard let known = state.apps[app], let countedAt = known.countedAt else { return true }
            return known.pending + rows > limit && now.timeIntervalSince(countedAt) >= Self.recountInterval
        }
        let counted = stale ? try await count() : nil
        return state.withLock { state in
            var known = state.apps[app] ?? App()
            if let counted {
                known.pending = counted
                known.countedAt = now
            }
            let room = max(0, min(rows, limit - known.pending))
            known.pending += room
            state.apps[app] = known
            return room
        }
    }

    /// Counts refused events; whether to log it (the first time in ``warningInterval``).
    func refuse(app: String, type: WebhookEventType, count: Int, now: Date) -> Bool {
        state.withLock { state in
            // One entry per app and type at most: apps are the configuration's (events are
            // written only for apps a webhook is configured for), types are three.
            if let index = state.refused.firstIndex(where: { $0.app == app && $0.type == type }) {
                state.refused[index].count += count
            } else {
                state.refused.append(WebhookEventCount(app: app, type: type, count: count))
            }
            var known = state.apps[app] ?? App()
            defer { state.apps[app] = known }
            if let warnedAt = known.warnedAt, now.timeIntervalSince(warnedAt) < Self.warningInterval { return false }
            known.warnedAt = now
            return true
        }
    }

    /// The refusals counted since the last call.
    func takeRefused() -> [WebhookEventCount] {
        state.withLock { state in
            defer { state.refused = [] }
            return state.refused
        }
    }
}
