#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Live Activities: the update tokens an app reports for each activity, the events sent to
/// them, and the end after which an activity takes no more.
extension QueueEngine {
    /// Adds (or refreshes) an update token of an activity, creating the activity on its first
    /// token. Refused for an activity that ended, and past ``LiveActivity/maximumTokens``.
    func registerActivityToken(
        app: String, activityID: String, token: String, user: String?, environment: TokenEnvironment?, now: Date
    ) async throws -> (token: ActivityToken, created: Bool) {
        try await database.write(.durable) { [self] connection in
            let time = now.milliseconds
            try await connection.query(sql.insertActivity, [.text(app), .text(activityID), .int(time)])
            let state = try await connection.query(sql.lockActivity, [.text(app), .text(activityID)]).first?.int(0)
            guard ActivityCode(code: state) == .active else { throw Self.ended(activityID) }
            // The activity's row is locked: its tokens do not change under this transaction.
            let created = try await connection.query(sql.activityToken, [.text(app), .text(activityID), .text(token)]).isEmpty
            if created {
                let count = try await connection.query(sql.countActivityTokens, [.text(app), .text(activityID)]).first?.int(0, default: 0) ?? 0
                guard count < LiveActivity.maximumTokens else {
                    throw StoreError(.invalidInput, "activity \(activityID) has \(count) update tokens, the most one activity may have (one per device it runs on)")
                }
            }
            let environment: SQLValue = environment.map { .code(EnvironmentCode($0)) } ?? .null
            guard let row = try await connection.query(
                sql.upsertActivityToken, [.text(app), .text(activityID), .text(token), .text(user), environment, .int(time)]
            ).first else { throw StoreError(.databaseError, "the token upsert returned no row") }
            return (Self.activityToken(row), created)
        }
    }

    func activity(app: String, id: String) async throws -> LiveActivity? {
        try await database.read { [self] connection in
            guard let row = try await connection.query(sql.selectActivity, [.text(app), .text(id)]).first else { return nil }
            let tokens = try await connection.query(sql.activityTokens, [.text(app), .text(id), .int(LiveActivity.maximumTokens)]).map(Self.activityToken)
            return LiveActivity(
                app: app, id: id, state: ActivityCode(code: row.int(0))?.state ?? .active, tokens: tokens, createdAt: Date(milliseconds: row.int(1) ?? 0),
                endedAt: row.int(2).map(Date.init(milliseconds:)), dismissalAt: row.int(3).map(Date.init(milliseconds:))
            )
        }
    }

    func deleteActivityToken(app: String, activityID: String, token: String) async throws -> Bool {
        try await database.write(.durable) { [self] connection in
            !(try await connection.query(sql.deleteActivityToken, [.text(app), .text(activityID), .text(token)])).isEmpty
        }
    }

    /// The deliveries of an event to an activity: one per update token. Ends the activity when
    /// the event does. `nil` when the activity has ended (the caller answers with the
    /// notification of the same idempotency key, if any, else a conflict).
    func activityDeliveries(
        _ request: NotificationRequest, activityID: String, now: Date, on connection: any SQLConnection
    ) async throws -> [PlannedDelivery]? {
        // Locked: an end and another event of the same activity take turns, so only one end wins.
        guard let state = try await connection.query(sql.lockActivity, [.text(request.app), .text(activityID)]).first else {
            throw StoreError(.notFound, "no Live Activity \(activityID) in app \(request.app): its app reports an update token first (PUT …/activities/\(activityID)/tokens/{token})")
        }
        guard ActivityCode(code: state.int(0)) == .active else { return nil }
        if let until = request.endsActivityUntil {
            try await connection.query(sql.endActivity, [.text(request.app), .text(activityID), .int(now.milliseconds), .int(until.milliseconds)])
        }
        let rows = try await connection.query(sql.activityTokens, [.text(request.app), .text(activityID), .int(LiveActivity.maximumTokens)])
        return rows.compactMap { row in row.text(0).map { PlannedDelivery(token: $0, state: .pending, environment: row.int(2)) } }
    }

    /// Forgets up to `limit` ended activities whose dismissal date has passed, with their
    /// update tokens; returns how many.
    func forgetDismissedActivities(now: Date, limit: Int) async throws -> Int {
        try await database.write(.durable) { [self] connection in
            let keys = try await connection.query(sql.dismissedActivities, [.int(now.milliseconds), .int(limit)])
            guard !keys.isEmpty else { return 0 }
            let rows: [[SQLValue]] = keys.map { [.text($0.text(0)), .text($0.text(1))] }
            for statement in sql.deleteActivities { try await connection.query(statement, [.rows(rows)]) }
            return keys.count
        }
    }

    static func ended(_ activityID: String) -> StoreError {
        StoreError(.conflict, "Live Activity \(activityID) has ended: it takes no more events or tokens (a new activity has a new ID)")
    }

    static func activityToken(_ row: SQLRow) -> ActivityToken {
        let user = row.text(1)
        return ActivityToken(
            token: row.text(0) ?? "", user: user?.isEmpty == false ? user : nil, environment: EnvironmentCode.environment(row.int(2)),
            createdAt: Date(milliseconds: row.int(3) ?? 0), updatedAt: Date(milliseconds: row.int(4) ?? 0)
        )
    }
}
