import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// Performs what ``LegacyStateMachine`` decides, on one event loop: opens connections, writes,
/// arms timers, hands out outcomes. Every method runs on ``eventLoop``; the client reaches it
/// through a `NIOLoopBound`.
final class LegacyConnectionDriver {
    /// Where and how to connect.
    struct Connector {
        var host: String
        var port: Int
        var sslContext: NIOSSLContext
        var connectTimeout: TimeAmount
    }

    let eventLoop: any EventLoop
    private var machine: LegacyStateMachine<LegacyJob>
    private let connector: Connector
    private let logger: Logger
    private let tickInterval: TimeAmount
    /// Numbers connections, so events from an old one are ignored.
    private var connection = 0
    private var channel: (any Channel)?
    private var connectTimer: Scheduled<Void>?
    private var flushTimer: Scheduled<Void>?
    private var reconnectTimer: Scheduled<Void>?
    private var ticker: Scheduled<Void>?
    private var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    private var finished = false

    init(machine: LegacyStateMachine<LegacyJob>, connector: Connector, eventLoop: any EventLoop, logger: Logger) {
        self.machine = machine
        self.connector = connector
        self.eventLoop = eventLoop
        self.logger = logger
        let settle = machine.configuration.settleInterval
        tickInterval = .nanoseconds(min(max(settle.nanoseconds / 4, 5_000_000), 250_000_000))
    }

    // MARK: From the client

    func submit(_ items: [(LegacyNotification, LegacyJob)]) {
        perform(machine.submit(items, now: .now()))
    }

    func shutdown(_ waiter: CheckedContinuation<Void, Never>) {
        if finished {
            waiter.resume()
            return
        }
        shutdownWaiters.append(waiter)
        perform(machine.shutdown(now: .now()))
    }

    // MARK: From the channel handler

    func connectionReady(_ id: Int, channel: any Channel) {
        guard id == connection else { return }
        self.channel = channel
        connectTimer?.cancel()
        logger.debug("connected to the gateway", metadata: ["gateway": "\(connector.host):\(connector.port)"])
        perform(machine.connected(now: .now()))
    }

    func received(_ response: LegacyErrorResponse, connection id: Int) {
        guard id == connection else { return }
        logger.debug("error response", metadata: ["status": "\(response.status)", "identifier": "\(response.identifier)"])
        perform(machine.received(response, now: .now()))
    }

    func connectionClosed(_ id: Int, reason: String?) {
        guard id == connection else { return }
        channel = nil
        connectTimer?.cancel()
        perform(machine.connectionClosed(reason: reason, now: .now()))
    }

    // MARK: Actions

    private func perform(_ action: LegacyStateMachine<LegacyJob>.Action) {
        if let channel {
            for bytes in action.writes { channel.writeAndFlush(bytes, promise: nil) }
        }
        action.completions.deliver()
        for warning in action.warnings { logger.warning("\(warning)") }
        if action.close { channel?.close(promise: nil) }
        if action.connect { connect() }
        let isolated = eventLoop.assumeIsolated()
        if let deadline = action.armFlushTimer {
            flushTimer = isolated.scheduleTask(deadline: deadline) { self.perform(self.machine.flushTimerFired(now: .now())) }
        }
        if let deadline = action.reconnectAt {
            reconnectTimer?.cancel()
            reconnectTimer = isolated.scheduleTask(deadline: deadline) { self.perform(self.machine.reconnectTimerFired(now: .now())) }
        }
        if machine.unsettledCount > 0, ticker == nil { scheduleTick() }
        if action.shutdownComplete {
            finished = true
            for timer in [flushTimer, reconnectTimer, ticker, connectTimer] { timer?.cancel() }
            let waiters = shutdownWaiters
            shutdownWaiters = []
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Settles notifications while any are unsettled.
    private func scheduleTick() {
        ticker = eventLoop.assumeIsolated().scheduleTask(in: tickInterval) {
            self.ticker = nil
            self.perform(self.machine.tick(now: .now()))
        }
    }

    private func connect() {
        connection += 1
        let id = connection
        let connector = self.connector
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let serverHostname = (try? SocketAddress(ipAddress: connector.host, port: 0)) == nil ? connector.host : nil
        connectTimer = eventLoop.assumeIsolated().scheduleTask(in: connector.connectTimeout) {
            guard id == self.connection else { return }
            self.connection += 1  // ignore whatever the abandoned attempt reports later
            self.channel?.close(promise: nil)
            self.channel = nil
            self.perform(self.machine.connectFailed("\(connector.host):\(connector.port) did not complete TCP and TLS within \(connector.connectTimeout.nanoseconds / 1_000_000) ms", now: .now()))
        }
        ClientBootstrap(group: eventLoop)
            .connectTimeout(connector.connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: connector.sslContext, serverHostname: serverHostname))
                    try sync.addHandler(ByteToMessageHandler(LegacyErrorResponseDecoder()))
                    try sync.addHandler(LegacyGatewayHandler(driver: bound.value, connection: id))
                }
            }
            .connect(host: connector.host, port: connector.port)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    if id != self.connection { channel.close(promise: nil) }
                case .failure(let error):
                    guard id == self.connection else { return }
                    self.connectTimer?.cancel()
                    self.perform(self.machine.connectFailed("cannot connect to \(connector.host):\(connector.port): \(error)", now: .now()))
                }
            }
    }
}
