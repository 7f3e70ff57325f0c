import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// An app's notifications, listed newest first.
@Suite("Notification list", .timeLimit(.minutes(6)))
struct NotificationListTests {
    @Test("newest first, a page at a time, by status, with rejection counts; another app's never", arguments: Backend.allCases)
    func list(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.register(try registration(1), app: app)
            _ = try await store.recordFeedback(app: app, [(token(1), Date().addingTimeInterval(60))])
            var ids: [String] = []
            for number in 0..<7 {
                let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .tokens([token(number)]), payload: payload))
                ids.append(queued.id)
            }
            _ = try await store.enqueue(NotificationRequest(app: "elsewhere", audience: .all, payload: payload))
            _ = try await store.cancel(id: ids[3])
            var listed: [StoredNotification] = []
            var cursor: String?
            for _ in 0..<10 {
                let page = try await store.notifications(app: app, limit: 3, after: cursor)
                listed += page.items
                cursor = page.next
                if cursor == nil { break }
            }
            #expect(listed.map(\.id) == ids.reversed())
            #expect(listed.first { $0.id == ids[1] }?.counts.rejected == ["Unregistered": 1], "the device known to be gone")
            #expect(try await store.notifications(app: app, status: .cancelled).items.map(\.id) == [ids[3]])
            #expect(try await store.notifications(app: app, status: .done).items.map(\.id) == [ids[1]])
            #expect(try await store.notifications(app: app, status: .queued).items.count == 5)
        }
    }
}
