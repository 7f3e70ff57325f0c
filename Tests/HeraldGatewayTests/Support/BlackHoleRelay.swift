import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP relay on 127.0.0.1 to a server (a test's PostgreSQL) that can become a host that
/// accepts connections and never answers: a network partition, a frozen host. ``blackHole()``
/// stops moving bytes either way on every connection, and leaves new ones accepted but never
/// connected onwards; ``restore()`` moves them again, as a network that heals delivers what
/// it held (nothing is dropped, only delayed).
final class BlackHoleRelay: Sendable {
    private struct State {
        var isBlackHole = false
        /// Each connection's two channels, client side first.
        var pairs: [(Channel, Channel)] = []
        /// Connections accepted while black-holed, not yet connected onwards.
        var held: [Channel] = []
        var listener: Channel?
    }

    private let target: SocketAddress
    private let state = NIOLockedValueBox(State())

    init(to target: SocketAddress) {
        self.target = target
    }

    /// Starts listening; returns the port.
    func start() async throws -> Int {
        let bound = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Nothing is read from a client until its connection onwards is up.
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { [self] client in
                let held = state.withLockedValue { state -> Bool in
                    if state.isBlackHole { state.held.append(client) }
                    return state.isBlackHole
                }
                if !held { connect(client) }
                return client.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        state.withLockedValue { $0.listener = bound }
        return bound.localAddress!.port!
    }

    /// From now on nothing moves: connections stay open, bytes wait, new connections are
    /// accepted and left unanswered.
    func blackHole() {
        let pairs = state.withLockedValue { state in
            state.isBlackHole = true
            return state.pairs
        }
        for (client, server) in pairs {
            client.setOption(.autoRead, value: false).whenFailure { _ in }
            server.setOption(.autoRead, value: false).whenFailure { _ in }
        }
    }

    /// Bytes move again, and the connections held are connected onwards.
    func restore() {
        let (pairs, held) = state.withLockedValue { state in
            state.isBlackHole = false
            defer { state.held = [] }
            return (state.pairs, state.held)
        }
        for (client, server) in pairs {
            client.setOption(.autoRead, value: true).whenFailure { _ in }
            server.setOption(.autoRead, value: true).whenFailure { _ in }
        }
        for client in held { connect(client) }
    }

    /// Stops listening and closes every connection.
    func stop() async {
        let (listener, pairs, held) = state.withLockedValue { state in (state.listener, state.pairs, state.held) }
        try? await listener?.close()
        for (client, server) in pairs {
            client.close(promise: nil)
            server.close(promise: nil)
        }
        for client in held { client.close(promise: nil) }
    }

    private func connect(_ client: Channel) {
        ClientBootstrap(group: client.eventLoop)
            .channelOption(.autoRead, value: false)
            .channelInitializer { server in
                server.eventLoop.makeCompletedFuture { try server.pipeline.syncOperations.addHandler(Forward(to: client)) }
            }
            .connect(to: target)
            .whenComplete { [self] result in
                switch result {
                case .success(let server):
                    client.eventLoop.execute {
                        do {
                            try client.pipeline.syncOperations.addHandler(Forward(to: server))
                        } catch {
                            client.close(promise: nil)
                            server.close(promise: nil)
                            return
                        }
                        let flowing = self.state.withLockedValue { state -> Bool in
                            state.pairs.append((client, server))
                            return !state.isBlackHole
                        }
                        if flowing {
                            client.setOption(.autoRead, value: true).whenFailure { _ in }
                            server.setOption(.autoRead, value: true).whenFailure { _ in }
                        }
                    }
                case .failure:
                    client.close(promise: nil)
                }
            }
    }
}

/// Writes what one side reads to the other; closes the other when its side closes.
private final class Forward: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let partner: Channel

    init(to partner: Channel) {
        self.partner = partner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
