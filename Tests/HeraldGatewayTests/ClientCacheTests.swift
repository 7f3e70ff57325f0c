import HeraldCore
@testable import HeraldGateway
import Synchronization
import Testing

/// The cache of one platform's clients as a value, without sockets: made on first use, shared,
/// closed when idle, when shut down, and when a reload changes their app (once unused).
@Suite("Client cache")
struct ClientCacheTests {
    /// A client that knows whether it was closed.
    final class FakeClient: Sendable {
        let name: String
        private let closedCount = Atomic<Int>(0)
        init(_ name: String) { self.name = name }
        func close() { closedCount.add(1, ordering: .relaxed) }
        var closed: Int { closedCount.load(ordering: .relaxed) }
    }

    /// Counts the clients made.
    final class Maker: Sendable {
        private let made = Mutex<[FakeClient]>([])
        func make(_ name: String) -> FakeClient {
            let client = FakeClient(name)
            made.withLock { $0.append(client) }
            return client
        }
        var clients: [FakeClient] { made.withLock { $0 } }
    }

    static func app(_ id: String, revision: String?) -> GatewayConfiguration.App {
        var app = GatewayConfiguration.App(id: id)
        app.revision = revision
        return app
    }

    static func cache(idle: Duration = .seconds(60)) -> ClientCache<String, FakeClient> {
        ClientCache(idleAfter: idle) { $0.close() }
    }

    /// Waits (bounded) for the background closes.
    static func settled(_ clients: [FakeClient], closed: [Int]) async -> Bool {
        await eventuallyTrue { clients.map(\.closed) == closed }
    }

    static func eventuallyTrue(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<400 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    @Test("nothing is made until an app sends; one client per key, shared by every batch")
    func lazyAndShared() async throws {
        let cache = Self.cache()
        let maker = Maker()
        #expect(cache.count == 0)
        let shop = Self.app("shop", revision: "1")
        let first = try await cache.using("shop", app: shop, make: { maker.make("shop") }) { $0.name }
        let second = try await cache.using("shop", app: shop, make: { maker.make("shop") }) { $0.name }
        _ = try await cache.using("blog", app: Self.app("blog", revision: "1"), make: { maker.make("blog") }) { $0.name }
        #expect(first == "shop" && second == "shop")
        #expect(maker.clients.map(\.name) == ["shop", "blog"])
        #expect(cache.count == 2)
    }

    @Test("a client idle past idleAfter closes, one in use does not; the next batch makes a new one")
    func idleClose() async throws {
        let cache = Self.cache(idle: .seconds(10))
        let maker = Maker()
        let shop = Self.app("shop", revision: "1")
        _ = try await cache.using("shop", app: shop, make: { maker.make("shop") }) { _ in 0 }
        let (entered, enter) = AsyncStream.makeStream(of: Void.self)
        let (release, leave) = AsyncStream.makeStream(of: Void.self)
        let busy = Task {
            try await cache.using("blog", app: Self.app("blog", revision: "1"), make: { maker.make("blog") }) { _ in
                enter.yield()
                for await _ in release { break }
                return 0
            }
        }
        for await _ in entered { break }
        #expect(cache.closeIdle(now: .now + .seconds(9)) == 0, "not idle long enough")
        #expect(cache.closeIdle(now: .now + .seconds(11)) == 1, "shop closes; blog is in use")
        #expect(await Self.settled(maker.clients, closed: [1, 0]))
        leave.yield()
        _ = try await busy.value
        _ = try await cache.using("shop", app: shop, make: { maker.make("shop") }) { _ in 0 }
        #expect(maker.clients.map(\.name) == ["shop", "blog", "shop"], "a new client for shop")
        #expect(cache.count == 2)
    }

    @Test("a reload that changes one app closes its client, once unused, and keeps every other app's")
    func reloadChangesOneApp() async throws {
        let cache = Self.cache()
        let maker = Maker()
        var apps = (0..<5).map { Self.app("app\($0)", revision: "1") }
        for app in apps { _ = try await cache.using(app.id, app: app, make: { maker.make(app.id) }) { _ in 0 } }
        let before = apps[2]
        // A batch of app2 under way when the reload comes keeps its client until it is done.
        let (entered, enter) = AsyncStream.makeStream(of: Void.self)
        let (release, leave) = AsyncStream.makeStream(of: Void.self)
        let busy = Task {
            try await cache.using("app2", app: before, make: { maker.make("app2") }) { client in
                enter.yield()
                for await _ in release { break }
                return client.closed
            }
        }
        for await _ in entered { break }
        apps[2].revision = "2"
        apps.remove(at: 4)
        cache.update(current: apps)
        #expect(await Self.settled(maker.clients, closed: [0, 0, 0, 0, 1]), "app4 is gone; app2 is in use")
        leave.yield()
        #expect(try await busy.value == 0, "not closed under the batch")
        #expect(await Self.settled(maker.clients, closed: [0, 0, 1, 0, 1]))
        // The next batch of app2 gets a client made with its new settings; one of the batches
        // from before the reload gets the same one.
        _ = try await cache.using("app2", app: apps[2], make: { maker.make("app2 new") }) { _ in 0 }
        let stale = try await cache.using("app2", app: before, make: { maker.make("app2 stale") }) { $0.name }
        #expect(stale == "app2 new")
        _ = try await cache.using("app0", app: apps[0], make: { maker.make("app0 again") }) { _ in 0 }
        #expect(maker.clients.map(\.name) == ["app0", "app1", "app2", "app3", "app4", "app2 new"], "app0 kept its client")

        // A batch from before a reload that comes first makes a client with the old settings;
        // the next batch with the new ones replaces it, and it closes.
        let oldApp3 = apps[3]
        apps[3].revision = "2"
        cache.update(current: apps)
        #expect(await Self.settled(maker.clients, closed: [0, 0, 1, 0, 1, 0]), "app3's client closes")
        _ = try await cache.using("app3", app: oldApp3, make: { maker.make("app3 stale") }) { _ in 0 }
        _ = try await cache.using("app3", app: apps[3], make: { maker.make("app3 new") }) { _ in 0 }
        #expect(await Self.settled(maker.clients, closed: [0, 0, 1, 1, 1, 0, 1, 0]))
        #expect(cache.count == 4, "app0, app1, app2 and app3, each once")
    }

    @Test("an app made in code has no revision: a reload rebuilds its client")
    func noRevision() async throws {
        let cache = Self.cache()
        let maker = Maker()
        let app = Self.app("shop", revision: nil)
        _ = try await cache.using("shop", app: app, make: { maker.make("first") }) { _ in 0 }
        _ = try await cache.using("shop", app: app, make: { maker.make("unused") }) { _ in 0 }
        cache.update(current: [app])
        #expect(await Self.settled(maker.clients, closed: [1]))
        _ = try await cache.using("shop", app: app, make: { maker.make("second") }) { _ in 0 }
        #expect(maker.clients.map(\.name) == ["first", "second"])
    }

    @Test("shutdown closes every client, and nothing is made after it")
    func shutdown() async throws {
        let cache = Self.cache()
        let maker = Maker()
        for id in ["a", "b"] { _ = try await cache.using(id, app: Self.app(id, revision: "1"), make: { maker.make(id) }) { _ in 0 } }
        await cache.shutdown()
        #expect(maker.clients.map(\.closed) == [1, 1])
        let after = try await cache.using("c", app: Self.app("c", revision: "1"), make: { maker.make("c") }) { _ in 0 }
        #expect(after == nil)
        #expect(maker.clients.count == 2, "none made after")
    }
}
