import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Broadcasts take turns: one under way does not hold back another, of any app, by more than
/// one batch per worker.
@Suite("Fair claims", .timeLimit(.minutes(6)))
struct FairnessTests {
    /// A token in key range `number % 16` (tokens are spread over the 16 ranges, as real ones are).
    static func spread(_ number: Int) -> String {
        String(format: "%x", number % 16) + String(format: "%063x", number)
    }

    @Test("a broadcast queued while another is under way is claimed next, then they alternate", arguments: Backend.allCases)
    func broadcastsTakeTurns(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await registerAll(store, 640) { try DeviceRegistration(token: Self.spread($0)) }
            try await registerAll(store, 64, app: "other") { try DeviceRegistration(token: Self.spread($0)) }
            let (big, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            var now = Date()
            var order: [String] = []
            func claimOne() async throws {
                now = now.addingTimeInterval(0.01)
                let batches = try await store.claim(owner: "w", limit: 10, now: now)
                for batch in batches {
                    order.append(batch.notification.app)
                    try await acceptAll(store, batch, now: now)
                }
            }
            // The big one is under way: every one of its ranges has had a turn.
            for _ in 0..<20 { try await claimOne() }
            #expect(order.allSatisfy { $0 == app })
            let (small, _) = try await store.enqueue(NotificationRequest(app: "other", audience: .all, payload: payload), now: now)
            order.removeAll()
            for _ in 0..<8 { try await claimOne() }
            #expect(order.first == "other", "the newcomer's ranges are claimed first: \(order)")
            for _ in 0..<200 where try await store.notification(id: small.id)?.status != .done { try await claimOne() }
            #expect(try await store.notification(id: small.id)?.status == .done)
            // While both were under way, the big one kept sending too: they shared.
            #expect(order.contains(app) || order.filter { $0 == "other" }.count <= 16)
            for _ in 0..<400 where try await store.notification(id: big.id)?.status != .done { try await claimOne() }
            #expect(try await store.notification(id: big.id)?.counts.accepted == 640)
        }
    }
}
