import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP relay on 127.0.0.1 for tests: an HTTP CONNECT proxy, or a transparent relay to a fixed
/// target that can freeze the first connection (stop forwarding, keep it open) to play a dead peer.
final class TestRelay: @unchecked Sendable {
    enum Mode {
        case connectProxy(requiredAuthorization: String?)
        case transparent(target: SocketAddress, freezeFirstConnectionAfterServerBytes: Int?)
    }

    let mode: Mode
    private var channel: Channel?
    private let counter = NIOLockedValueBox(0)

    init(_ mode: Mode) {
        self.mode = mode
    }

    /// Connections accepted so far.
    var connections: Int { counter.withLockedValue { $0 } }

    func start() async throws -> Int {
        let mode = self.mode
        let counter = self.counter
        let bound = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let number = counter.withLockedValue { count -> Int in
                    count += 1
                    return count
                }
                return channel.eventLoop.makeCompletedFuture {
                    switch mode {
                    case .connectProxy(let authorization):
                        try channel.pipeline.syncOperations.addHandler(ConnectRequestHandler(requiredAuthorization: authorization))
                    case .transparent(let target, let freeze):
                        try channel.pipeline.syncOperations.addHandler(
                            RelayHandler(target: target, freezeAfterServerBytes: number == 1 ? freeze : nil)
                        )
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        channel = bound
        return bound.localAddress!.port!
    }

    func stop() async throws {
        try await channel?.close()
    }
}

/// Forwards bytes to a partner channel; optionally stops after a number of bytes.
private final class GlueHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    var partner: Channel?
    var freezeAfter: Int?
    var forwarded = 0
    var frozen = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        if frozen { return }
        if let limit = freezeAfter, forwarded + bytes.readableBytes > limit {
            frozen = true  // from here on: swallow everything, never close
            return
        }
        forwarded += bytes.readableBytes
        partner?.writeAndFlush(bytes, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if freezeAfter == nil { partner?.close(promise: nil) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

private final class RelayHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    let target: SocketAddress
    let freezeAfterServerBytes: Int?
    private var pending: [ByteBuffer] = []
    private var glue: GlueHandler?

    init(target: SocketAddress, freezeAfterServerBytes: Int?) {
        self.target = target
        self.freezeAfterServerBytes = freezeAfterServerBytes
    }

    func channelActive(context: ChannelHandlerContext) {
        let client = context.channel
        // Freezing the server-to-client direction is enough: the client sees no answers and no
        // PING acknowledgements, while its connection stays open.
        let freeze = freezeAfterServerBytes
        let loop = NIOLoopBound(self, eventLoop: context.eventLoop)
        let clientContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let fromServer = GlueHandler()
                    fromServer.partner = client
                    fromServer.freezeAfter = freeze
                    try channel.pipeline.syncOperations.addHandler(fromServer)
                }
            }
            .connect(to: target)
            .whenComplete { result in
                switch result {
                case .success(let server):
                    let toServer = GlueHandler()
                    toServer.partner = server
                    loop.value.glue = toServer
                    try? clientContext.value.pipeline.syncOperations.addHandler(toServer)
                    for bytes in loop.value.pending { server.writeAndFlush(bytes, promise: nil) }
                    loop.value.pending = []
                    clientContext.value.pipeline.syncOperations.removeHandler(loop.value, promise: nil)
                case .failure:
                    clientContext.value.close(promise: nil)
                }
            }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        pending.append(unwrapInboundIn(data))
    }
}

private final class ConnectRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let requiredAuthorization: String?
    private var head = ByteBuffer()
    private var done = false

    init(requiredAuthorization: String?) {
        self.requiredAuthorization = requiredAuthorization
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        var bytes = unwrapInboundIn(data)
        head.writeBuffer(&bytes)
        let text = String(buffer: head)
        guard let end = text.range(of: "\r\n\r\n") else { return }
        done = true
        let lines = text[..<end.lowerBound].split(separator: "\r\n")
        let request = lines.first?.split(separator: " ") ?? []
        guard request.count == 3, request[0] == "CONNECT" else {
            reply(context, "HTTP/1.1 400 Bad Request\r\n\r\n", close: true)
            return
        }
        if let required = requiredAuthorization, !lines.contains(where: { $0 == "Proxy-Authorization: \(required)" }) {
            reply(context, "HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", close: true)
            return
        }
        let parts = request[1].split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else {
            reply(context, "HTTP/1.1 400 Bad Request\r\n\r\n", close: true)
            return
        }
        let client = context.channel
        let contextBox = NIOLoopBound(context, eventLoop: context.eventLoop)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let fromServer = GlueHandler()
                    fromServer.partner = client
                    try channel.pipeline.syncOperations.addHandler(fromServer)
                }
            }
            .connect(host: String(parts[0]), port: port)
            .whenComplete { result in
                switch result {
                case .success(let server):
                    let toServer = GlueHandler()
                    toServer.partner = server
                    try? contextBox.value.pipeline.syncOperations.addHandler(toServer)
                    contextBox.value.pipeline.syncOperations.removeHandler(handler.value, promise: nil)
                    handler.value.reply(contextBox.value, "HTTP/1.1 200 Connection Established\r\n\r\n", close: false)
                case .failure:
                    handler.value.reply(contextBox.value, "HTTP/1.1 502 Bad Gateway\r\n\r\n", close: true)
                }
            }
    }

    func reply(_ context: ChannelHandlerContext, _ text: String, close: Bool) {
        let channel = context.channel
        let future = channel.writeAndFlush(channel.allocator.buffer(string: text))
        if close { future.whenComplete { _ in channel.close(promise: nil) } }
    }
}
