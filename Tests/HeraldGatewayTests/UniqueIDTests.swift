import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Testing

/// APNs's `apns-unique-id`: its development environment answers one beside the apns-id, and
/// Apple's Push Notifications Console finds a delivery's log by it; the gateway keeps it with the
/// delivery and lists it. Production answers none, and the list then shows none.
@Suite("APNs unique IDs kept with deliveries", .timeLimit(.minutes(3)))
struct UniqueIDTests {
    static func isUUID(_ text: String?) -> Bool { text.map { UUID(uuidString: $0) != nil } ?? false }

    @Test("a development-environment answer's apns-unique-id is listed beside the receipt; a production one has none", arguments: Backend.allCases)
    func listed(backend: Backend) async throws {
        for sandbox in [true, false] {
            try await GatewayHarness.run(backend, mock: { $0.sandbox = sandbox }) { harness in
                try await harness.call(.put, "/v1/apps/\(appID)/devices/" + token(1), [:])
                let done = try await harness.waitUntilDone(try await harness.send(["tokens": .array([.string(token(1))])], alert: "traced"))
                #expect(done.count("accepted") == 1, "\(done.jsonString)")
                let listed = try await harness.call(.get, "/v1/notifications/\(done["id"]!.stringValue!)/deliveries?outcome=accepted")
                let delivery = try #require(listed.json?["deliveries"]?.arrayItems.first)
                #expect(Self.isUUID(delivery["receipt"]?.stringValue), "\(delivery.jsonString)")
                if sandbox {
                    let unique = delivery["apnsUniqueID"]?.stringValue
                    #expect(Self.isUUID(unique) && unique != delivery["receipt"]?.stringValue, "\(delivery.jsonString)")
                } else {
                    #expect(delivery["apnsUniqueID"] == nil, "production gives none: \(delivery.jsonString)")
                }
            }
        }
    }
}
