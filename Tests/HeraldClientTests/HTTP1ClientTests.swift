import HeraldClient
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// Herald's HTTP/1.1 client as a peer sees it: its guard refuses an address before any packet,
/// and the table of origins a caller's endpoints grow stays under its bound.
@Suite("HTTP/1.1 client: the connect guard and the origin bound", .timeLimit(.minutes(2)))
struct HTTP1ClientTests {
    @Test("a guard that refuses the address: addressNotAllowed with its reason, and the listener accepts nothing")
    func guarded() async throws {
        let accepted = Counter()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                accepted.value.withLock { $0 += 1 }
                return channel.close()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        var configuration = HTTP1Client.Configuration()
        configuration.connectGuard = { host, address in "\(host) is \(address.ipAddress ?? "?"): refused" }
        let client = HTTP1Client(configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        let error = await #expect(throws: HTTP1Error.self) {
            try await client.exchange(https: false, host: "127.0.0.1", port: listener.localAddress!.port!, method: .POST, target: "/x", headers: [], body: [1])
        }
        #expect(error?.code == .addressNotAllowed && error?.message == "127.0.0.1 is 127.0.0.1: refused", "\(String(describing: error))")
        try await Task.sleep(for: .milliseconds(100))
        #expect(accepted.value.withLock { $0 } == 0)
        await client.shutdown()
        try await listener.close()
    }

    @Test("endpoints at more origins than the bound: the table stays at maximumOrigins, each exchange still answered")
    func originBound() async throws {
        var configuration = HTTP1Client.Configuration()
        // Refused before any connect: no traffic, whatever listens on those ports.
        configuration.connectGuard = { _, _ in "refused" }
        let client = HTTP1Client(configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        for port in 1..<(HTTP1Client.maximumOrigins + 40) {
            let error = await #expect(throws: HTTP1Error.self) {
                try await client.exchange(https: false, host: "127.0.0.1", port: 40000 + port, method: .POST, target: "/", headers: [], body: [])
            }
            #expect(error?.code == .addressNotAllowed)
            #expect(client.originCount <= HTTP1Client.maximumOrigins)
        }
        await client.shutdown()
        let late = await #expect(throws: HTTP1Error.self) {
            try await client.exchange(https: false, host: "127.0.0.1", port: 40001, method: .POST, target: "/", headers: [], body: [])
        }
        #expect(late?.code == .shutdown)
    }
}

private final class Counter: Sendable {
    let value = Mutex(0)
}
