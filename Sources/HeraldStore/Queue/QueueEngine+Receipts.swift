import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Receipts, their keys and counts, and the event stream: written once for both databases.
extension QueueEngine {
    // MARK: Keys

    func receiptKeys(app: String, now: Date) async throws -> [StoredReceiptKey] {
        let keys = try await database.read { [self] connection in try await readReceiptKeys(app: app, now: now, on: connection) }
        if !keys.isEmpty { return keys }
        return try await database.write(.durable) { [self] connection in
            try await connection.query(sql.insertFirstReceiptKey, [.text(app), .text(Self.hex(Self.newSecret())), .int(now.milliseconds)])
            return try await readReceiptKeys(app: app, now: now, on: connection)
        }
    }

    func rotateReceiptKey(app: String, overlap: TimeInterval, now: Date) async throws -> [StoredReceiptKey] {
        try await database.write(.durable) { [self] connection in
            let newest = try await connection.query(sql.newestReceiptKey, [.text(app)]).first
            let generation = newest?.int(1, default: 0) ?? 0
            if newest != nil {
                try await connection.query(sql.expireReceiptKey, [.text(app), .int(Int64(generation)), .int(now.addingTimeInterval(overlap).milliseconds)])
            }
            let next = generation + 1
            try await connection.query(
                sql.putReceiptKey, [.text(app), .int(Int64((next - 1) % 16)), .int(Int64(next)), .text(Self.hex(Self.newSecret())), .int(now.milliseconds)])
            return try await readReceiptKeys(app: app, now: now, on: connection)
        }
    }

    private func readReceiptKeys(app: String, now: Date, on connection: any SQLConnection) async throws -> [StoredReceiptKey] {
        try await connection.query(sql.receiptKeys, [.text(app), .int(now.milliseconds)]).map { row in
            StoredReceiptKey(
                slot: row.int(0, default: 0), generation: row.int(1, default: 0), secret: Self.bytes(hex: row.text(2) ?? ""),
                createdAt: Date(milliseconds: row.int(3) ?? 0), expiresAt: row.int(4).map { Date(milliseconds: $0) })
        }
    }

    private static func newSecret() -> [UInt8] {
        var random = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    // MARK: Receipts

    func notificationApps(_ ids: [String]) async throws -> [String: String] {
        try await database.read { [self] connection in
            var apps: [String: String] = [:]
            for part in Self.chunks(ids) {
                for row in try await connection.query(sql.notificationApps, [.texts(part)]) {
                    if let id = row.text(0), let app = row.text(1) { apps[id] = app }
                }
            }
            return apps
        }
    }

    func receiptDevices(_ keys: [DeviceHashKey]) async throws -> [DeviceHashKey: [String]] {
        try await database.read { [self] connection in
            var devices: [DeviceHashKey: [String]] = [:]
            for part in Self.chunks(keys) {
                let rows: [[SQLValue]] = part.map { [.text($0.app), .code(KindCode($0.kind)), .int(Int64($0.hash))] }
                for row in try await connection.query(sql.devicesWithHashes, [.rows(rows)]) {
                    guard let app = row.text(0), let kind = KindCode(code: row.int(1))?.kind, let hash = row.int(2), let token = row.text(3) else { continue }
                    devices[DeviceHashKey(app: app, kind: kind, hash: UInt32(truncatingIfNeeded: hash)), default: []].append(token)
                }
            }
            return devices
        }
    }

    /// Stores `receipts` (each once), counts them and writes their events; returns those new.
    func recordReceipts(_ receipts: [ReceiptRecord], now: Date) async throws -> [ReceiptRecord] {
        guard !receipts.isEmpty else { return [] }
        let apps = Dictionary(receipts.map { ($0.notification, $0.app) }, uniquingKeysWith: { first, _ in first })
        return try await database.write(.durable) { [self] connection in
            var stored: [ReceiptRecord] = []
            var latencies: [ReceiptRecord: Int64] = [:]
            for part in Self.chunks(receipts) {
                let rows: [[SQLValue]] = part.map { receipt in
                    let latency = max(0, now.milliseconds - receipt.issuedAt.milliseconds)
                    return [
                        .text(receipt.notification), .text(receipt.device), .code(EventCode(receipt.event)), .text(receipt.action),
                        .code(PlatformCode(receipt.platform)), .int(latency),
                    ]
                }
                for row in try await connection.query(sql.insertReceipts, [.rows(rows), .int(now.milliseconds)]) {
                    guard let notification = row.text(0), let device = row.text(1), let event = EventCode(code: row.int(2))?.receiptEvent else { continue }
                    let receipt = ReceiptRecord(
                        app: apps[notification] ?? "", notification: notification, device: device, platform: PlatformCode.platform(row.int(4)), event: event,
                        action: row.text(3) ?? "", issuedAt: now)
                    stored.append(receipt)
                    latencies[receipt] = row.int(5) ?? 0
                }
            }
            guard !stored.isEmpty else { return [] }
            struct CountKey: Hashable {
                var notification: String
                var platform: DevicePlatform
                var event: ReceiptEvent
            }
            var counts: [CountKey: Int] = [:]
            for receipt in stored { counts[CountKey(notification: receipt.notification, platform: receipt.platform, event: receipt.event), default: 0] += 1 }
            // In key order: two processes adding to the same counts lock them in one order.
            let rows: [[SQLValue]] = counts.sorted {
                ($0.key.notification, $0.key.platform.code, EventCode($0.key.event).rawValue) < ($1.key.notification, $1.key.platform.code, EventCode($1.key.event).rawValue)
            }.map { [.text($0.key.notification), .code(PlatformCode($0.key.platform)), .code(EventCode($0.key.event)), .int(Int64($0.value))] }
            for part in Self.chunks(rows) { try await connection.query(sql.addReceiptCounts, [.rows(Array(part))]) }
            for (app, receipts) in Dictionary(grouping: stored, by: \.app) {
                let events: [(StreamEventType, String)] = receipts.map { receipt in
                    var writer = JSONWriter(capacity: 160)
                    writer.beginObject()
                    for (key, value) in [("notification", receipt.notification), ("device", receipt.device), ("platform", receipt.platform.rawValue)] {
                        writer.key(key)
                        writer.string(value)
                    }
                    if !receipt.action.isEmpty {
                        writer.key("action")
                        writer.string(receipt.action)
                    }
                    writer.key("latencyMs")
                    writer.int(Int(latencies[receipt] ?? 0))
                    writer.endObject()
                    return (EventCode(receipt.event).type, String(decoding: writer.bytes, as: UTF8.self))
                }
                try await appendEvents(app: app, events, now: now, on: connection)
                try await recordReceiptWebhooks(app: app, receipts, latencies: latencies, now: now, on: connection)
            }
            return stored
        }
    }

    func receiptCounts(notification: String) async throws -> ReceiptCounts {
        try await database.read { [self] connection in
            var counts = ReceiptCounts()
            for row in try await connection.query(sql.receiptCounts, [.text(notification)]) {
                guard let event = EventCode(code: row.int(1))?.receiptEvent else { continue }
                counts.byPlatform[PlatformCode.platform(row.int(0)), default: [:]][event, default: 0] += row.int(2, default: 0)
            }
            return counts
        }
    }

    func funnel(notification: String) async throws -> NotificationFunnel {
        try await database.read { [self] connection in
            var funnel = NotificationFunnel()
            for row in try await connection.query(sql.receiptCounts, [.text(notification)]) {
                guard let event = EventCode(code: row.int(1))?.receiptEvent else { continue }
                let platform = PlatformCode.platform(row.int(0))
                let count = row.int(2, default: 0)
                switch event {
                case .received: funnel.byPlatform[platform, default: FunnelStages()].received += count
                case .dismissed: funnel.byPlatform[platform, default: FunnelStages()].dismissed += count
                case .opened, .clicked:
                    // Counted by device below; the platform has a funnel.
                    if funnel.byPlatform[platform] == nil { funnel.byPlatform[platform] = FunnelStages() }
                }
            }
            // Opened: devices that opened it or chose an action, each once; clicked: devices that chose one.
            let opening: [Int64] = [Int64(EventCode.opened.rawValue), Int64(EventCode.clicked.rawValue)]
            for row in try await connection.query(sql.receiptDevices, [.text(notification), .ints(opening)]) {
                funnel.byPlatform[PlatformCode.platform(row.int(0)), default: FunnelStages()].opened = row.int(1, default: 0)
            }
            for row in try await connection.query(sql.receiptDevices, [.text(notification), .ints([Int64(EventCode.clicked.rawValue)])]) {
                funnel.byPlatform[PlatformCode.platform(row.int(0)), default: FunnelStages()].clicked = row.int(1, default: 0)
            }
            for platform in Array(funnel.byPlatform.keys) {
                funnel.byPlatform[platform]?.receivedLatency = try await percentiles(notification, .received, platform, on: connection)
                funnel.byPlatform[platform]?.openedLatency = try await percentiles(notification, .opened, platform, on: connection)
            }
            return funnel
        }
    }

    private func percentiles(_ notification: String, _ event: EventCode, _ platform: DevicePlatform, on connection: any SQLConnection) async throws -> (p50: Int, p95: Int)? {
        let latencies = try await connection.query(
            sql.receiptLatencies, [.text(notification), .code(event), .code(PlatformCode(platform)), .int(NotificationFunnel.latencySample)]
        ).map { $0.int(0, default: 0) }
        guard !latencies.isEmpty else { return nil }
        func at(_ fraction: Double) -> Int { latencies[min(latencies.count - 1, Int((Double(latencies.count) * fraction).rounded(.up)) - 1)] }
        return (at(0.5), at(0.95))
    }

    func dailyFunnel(app: String, days: Int, now: Date) async throws -> [DayFunnel] {
        try await database.read { [self] connection in
            let today = Int64((now.timeIntervalSince1970 / 86_400).rounded(.down))
            let first = today - Int64(days) + 1
            var funnels = (first...today).map { DayFunnel(day: Self.dayText($0)) }
            // Each notification's day is when it was made; its ID (which sorts by that time) only
            // bounds the read.
            let start = first * 86_400_000
            let notifications = try await connection.query(sql.notificationsSince, [.text(app), .text(Self.idPrefix(milliseconds: start)), .int(start)])
            var dayOf: [String: Int] = [:]
            for row in notifications {
                guard let id = row.text(0), let made = row.int(3) else { continue }
                let index = Int(made / 86_400_000 - first)
                guard funnels.indices.contains(index) else { continue }
                dayOf[id] = index
                funnels[index].notifications += 1
                funnels[index].targeted += row.int(1, default: 0)
                funnels[index].accepted += row.int(2, default: 0)
            }
            for part in Self.chunks(Array(dayOf.keys)) {
                for row in try await connection.query(sql.receiptCountsOf, [.texts(part)]) {
                    guard let id = row.text(0), let index = dayOf[id] else { continue }
                    let count = row.int(2, default: 0)
                    switch EventCode(code: row.int(1))?.receiptEvent {
                    case .received?: funnels[index].received += count
                    case .opened?: funnels[index].opened += count
                    case .dismissed?: funnels[index].dismissed += count
                    case .clicked?: funnels[index].clicked += count
                    case nil: break
                    }
                }
            }
            return funnels
        }
    }

    /// The start of the notification IDs (UUIDv7, ``NotificationID``) made at `milliseconds`:
    /// the text of every ID made then or later sorts at or after it.
    static func idPrefix(milliseconds: Int64) -> String {
        let hex = String(UInt64(max(0, milliseconds)), radix: 16)
        let digits = Array(String(repeating: "0", count: max(0, 12 - hex.count)) + hex)
        return String(digits[0..<8]) + "-" + String(digits[8..<12])
    }

    /// Day `day` since 1970 (UTC) as `YYYY-MM-DD`.
    static func dayText(_ day: Int64) -> String {
        // Howard Hinnant's civil_from_days.
        let z = day + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(y)-\(two(m))-\(two(d))"
    }

    // MARK: Event stream

    /// Appends `events` (type and JSON data) to `app`'s stream, in the caller's transaction.
    func appendEvents(app: String, _ events: [(StreamEventType, String)], now: Date, on connection: any SQLConnection) async throws {
        guard !events.isEmpty else { return }
        let rows: [[SQLValue]] = events.map { [.code(EventCode($0.0)), .text($0.1)] }
        for part in Self.chunks(rows, of: 1000) { try await connection.query(sql.insertEvents, [.text(app), .int(now.milliseconds), .rows(Array(part))]) }
    }

    func events(app: String, after cursor: EventCursor, limit: Int) async throws -> [StreamEvent] {
        try await database.read { [self] connection in
            try await connection.query(sql.readEvents, [.text(app), .text(String(cursor.xid)), .int(cursor.sequence), .int(limit)]).compactMap { row in
                guard let sequence = row.int(0), let type = EventCode(code: row.int(1)) else { return nil }
                let next = EventCursor(xid: row.int(4) ?? 0, sequence: sequence)
                return StreamEvent(cursor: next.text, type: type.type, at: Date(milliseconds: row.int(2) ?? 0), data: row.text(3) ?? "{}")
            }
        }
    }

    func purgeEvents(before cutoff: Date, limit: Int) async throws -> Int {
        try await database.write(.durable) { [self] connection in
            try await connection.query(sql.purgeEvents, [.int(cutoff.milliseconds), .int(limit)]).count
        }
    }
}

/// Where a reader of an app's event stream is: after the event of this transaction (PostgreSQL's
/// xid; 0 on SQLite) and sequence number. Its text, `xid-seq`, is the API's `cursor`.
public struct EventCursor: Sendable, Hashable {
    public var xid: Int64
    public var sequence: Int64

    public init(xid: Int64, sequence: Int64) {
        self.xid = xid
        self.sequence = sequence
    }

    /// Before every event.
    public static let start = EventCursor(xid: 0, sequence: 0)

    public var text: String { "\(xid)-\(sequence)" }

    /// A cursor's text, or `nil` when it is not one.
    public init?(text: some StringProtocol) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.count <= 19 && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }),
            let xid = Int64(parts[0]), let sequence = Int64(parts[1])
        else { return nil }
        self.init(xid: xid, sequence: sequence)
    }
}
