import HeraldTransport
import HeraldAPNS
import HeraldHostilePeers
import HeraldTestSupport
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// Herald's HTTP/1.1 client as a peer sees it: its guard refuses an address before any packet,
/// and the table of origins a caller's endpoints grow stays under its bound.
@Suite("HTTP/1.1 client: the connect guard, the origin bound, keep-alive and cancellation", .timeLimit(.minutes(2)))
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

    @Test("keep-alive: a second request reuses the connection; one left unused past the idle timeout is closed and the next opens another", arguments: [false, true])
    func keepAlive(expires: Bool) async throws {
        if let reason = HTTP1PushService.unavailableReason {
            if HTTP1PushService.isRequired { Issue.record(Comment(rawValue: reason)) }
            try Test.cancel(Comment(rawValue: reason))
        }
        let (service, authority) = try HTTP1PushService.started(.accept)
        defer { service.stop() }
        var configuration = HTTP1Client.Configuration()
        configuration.additionalTrustRoots = [authority]
        configuration.idleTimeout = expires ? .milliseconds(100) : .seconds(60)
        let client = HTTP1Client(configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        for round in 0..<2 {
            if round == 1 { try await Task.sleep(for: .milliseconds(400)) }
            let answer = try await client.exchange(https: true, host: "127.0.0.1", port: service.port, method: .POST, target: "/push/k", headers: [("TTL", "60")], body: [1, 2, 3])
            #expect(answer.status == 201 && answer.location?.hasPrefix("/m/") == true)
        }
        await client.shutdown()
        #expect(service.received.count == 2)
        #expect(service.connections == (expires ? 2 : 1), "\(service.connections) connections")
    }

    @Test("a cancelled exchange ends: its connection is closed rather than waited on until the service answers")
    func cancelled() async throws {
        if let reason = HTTP1PushService.unavailableReason {
            if HTTP1PushService.isRequired { Issue.record(Comment(rawValue: reason)) }
            try Test.cancel(Comment(rawValue: reason))
        }
        let (service, authority) = try HTTP1PushService.started(.slow)
        defer { service.stop() }
        var configuration = HTTP1Client.Configuration()
        configuration.additionalTrustRoots = [authority]
        let client = HTTP1Client(configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        let exchange = Task {
            try await client.exchange(https: true, host: "127.0.0.1", port: service.port, method: .POST, target: "/push/c", headers: [("TTL", "60")], body: [1])
        }
        _ = await eventually(within: .seconds(10), every: .milliseconds(20)) { !service.received.isEmpty }
        exchange.cancel()
        let result = await exchange.result
        #expect(throws: HTTP1Error.self) { try result.get() }
        await client.shutdown()
    }
}

private final class Counter: Sendable {
    let value = Mutex(0)
}
