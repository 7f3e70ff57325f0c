import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Testing

/// A configuration reload (SIGHUP) while a broadcast of 60,000 devices is under way: nothing is
/// lost, nothing is sent twice, and what the new configuration says (a new provider key, a new
/// API key, a new app) applies from then on.
@Suite("Reload under load", .timeLimit(.minutes(6)))
struct ReloadTests {
    /// Large enough that the broadcast is still under way long after the reload, small enough
    /// not to hold both of CI's cores for minutes (at 300,000 it took 137 s in a debug build and
    /// starved the tests beside it past their time limits).
    static let devices = 60_000

    @Test("a 60,000-device broadcast: a reload midway swaps the provider key and the API key; each device gets it exactly once")
    func reloadUnderLoad() async throws {
        let newProviderKey = ProviderKey.generate(keyID: "RELOADKEY1", teamID: "HERALDTEAM")
        try await GatewayHarness.run(
            .sqlite,
            mock: {
                $0.registerProviderKey(newProviderKey.publicKey, keyID: newProviderKey.keyID, teamID: newProviderKey.teamID)
                $0.recordLimit = Self.devices + 1000
                $0.maximumConcurrentStreams = 500
            },
            gateway: { configuration in
                configuration.workers.count = 4
                configuration.workers.batchSize = 1000
            }
        ) { harness in
            let tokens = (0..<Self.devices).map { SpreadToken.make($0) }
            let registered = try await harness.gateway.store.register(
                contentsOf: AsyncStreamSequence(tokens.map { try! DeviceRegistration(token: $0) }), app: appID, batchSize: 25_000
            )
            #expect(registered == Self.devices)
            let queued = try await harness.call(.post, "/v1/apps/\(appID)/notifications", ["to": ["all": true], "payload": ["aps": ["alert": "reload"]]])
            let id = try #require(queued.json?["id"]?.stringValue)

            // Midway: a new provider key for the app, a new API key in place of the old, a new app.
            let midway = await eventually(within: .seconds(120), every: .milliseconds(5)) { harness.mock.acceptedCount >= 10_000 }
            #expect(midway, "the broadcast got going")
            var reloaded = harness.gateway.configuration
            reloaded.apps[0].credentials = .providerToken(newProviderKey)
            var blog = reloaded.apps[0]
            blog.id = "blog"
            blog.topic = "com.example.blog"
            reloaded.apps.append(blog)
            let (newKey, newEntry) = APIKey.generate(name: "rotated", apps: [appID, "blog"])
            reloaded.apiKeys = [newEntry]
            reloaded.workers.count = 9
            let needsRestart = try await harness.gateway.reload(reloaded)
            #expect(needsRestart == ["workers"], "only apps and API keys change at once")
            let sentBefore = harness.mock.acceptedCount
            #expect(sentBefore < Self.devices, "the reload came while the broadcast was under way")

            #expect(try await harness.call(.get, "/v1/apps", key: newKey).json?["apps"]?.arrayItems.count == 2, "the new key, for both apps")
            #expect(try await harness.call(.get, "/v1/apps").status == 401, "the old key is gone")
            let done = try await harness.waitUntilDone(id, timeout: .seconds(240), key: newKey)
            #expect(done.count("accepted") == Self.devices, "\(done.jsonString)")

            // Exactly once each, the old key before the reload and the new one after.
            var received: [String: Int] = [:]
            var byKey: [String: Int] = [:]
            for record in harness.mock.accepted {
                received[record.token, default: 0] += 1
                byKey[record.keyID ?? "none", default: 0] += 1
            }
            #expect(received.count == Self.devices && received.values.allSatisfy { $0 == 1 }, "each device once: \(received.count) devices, \(received.values.filter { $0 > 1 }.count) twice")
            #expect((byKey[newProviderKey.keyID] ?? 0) > 0 && (byKey[newProviderKey.keyID] ?? 0) <= Self.devices - sentBefore + 5_000, "\(byKey)")
            #expect(byKey.count == 2, "the old key before, the new one after: \(byKey)")
        }
    }
}

/// Tokens spread over the key space, as real ones are.
enum SpreadToken {
    static func make(_ number: Int) -> String {
        var generator = SplitMix64(seed: UInt64(truncatingIfNeeded: number))
        return (0..<4).map { _ in String(format: "%016llx", generator.next()) }.joined()
    }
}

/// An array as an `AsyncSequence`, for the store's bulk registration.
struct AsyncStreamSequence<Element: Sendable>: AsyncSequence, Sendable {
    let elements: [Element]
    init(_ elements: [Element]) { self.elements = elements }
    struct AsyncIterator: AsyncIteratorProtocol {
        var iterator: IndexingIterator<[Element]>
        mutating func next() async -> Element? { iterator.next() }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(iterator: elements.makeIterator()) }
}
