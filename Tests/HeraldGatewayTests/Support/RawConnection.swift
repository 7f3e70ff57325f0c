import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A plain TCP connection to the gateway for attacks an HTTP client cannot make: half a request
/// head, a body a byte at a time, many connections from one source address.
final class RawConnection: Sendable {
    let channel: any Channel
    private let collector: Collector

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let bytes = NIOLockedValueBox<[UInt8]>([])

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            bytes.withLockedValue { $0.append(contentsOf: buffer.readableBytesView) }
        }
    }

    private init(channel: any Channel, collector: Collector) {
        self.channel = channel
        self.collector = collector
    }

    /// Connects to 127.0.0.1:`port` from `source` (any address of 127.0.0.0/8 is this machine).
    static func connect(port: Int, from source: String = "127.0.0.1") async throws -> RawConnection {
        let collector = Collector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) }
            }
            .bind(to: try SocketAddress(ipAddress: source, port: 0))
            .connect(host: "127.0.0.1", port: port)
            .get()
        return RawConnection(channel: channel, collector: collector)
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    /// What the server sent so far, as text.
    var received: String { String(decoding: collector.bytes.withLockedValue { $0 }, as: UTF8.self) }

    var isOpen: Bool { channel.isActive }

    /// Waits at most `timeout` for the server to close the connection; whether it did.
    func closedByServer(within timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while channel.isActive, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return !channel.isActive
    }

    /// Sends a byte every 200 ms (a body far below any minimum rate) until the server closes
    /// the connection; whether it did. Bounded: 100 bytes, then 2 s more.
    func trickleUntilClosed() async -> Bool {
        var closed = false
        for _ in 0..<100 where !closed {
            try? await send(" ")
            try? await Task.sleep(for: .milliseconds(200))
            closed = !isOpen
        }
        return closed ? true : await closedByServer(within: .seconds(2))
    }

    func close() async {
        try? await channel.close()
    }
}
