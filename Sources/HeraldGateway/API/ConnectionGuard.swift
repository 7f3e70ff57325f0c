import HTTPTypes
import HummingbirdCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// Bounds on how a client may hold the API's connections, so that slow or greedy clients cannot
/// take every connection from the others (slowloris):
///
/// - A request's head must arrive whole within ``APILimits/requestHeadTimeout`` of the
///   connection opening or of the previous answer; an idle keep-alive connection is closed then too.
/// - A request's body must keep arriving at ``APILimits/minimumBodyRate`` bytes a second at least,
///   measured over windows of ``bodyRateWindow`` (after a first window of grace).
/// - One client address holds at most ``APILimits/maximumConnectionsPerAddress`` connections;
///   past it, a new connection is closed at once.
///
/// One handler per connection, in the HTTP/1 pipeline after the decoder.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// How many bytes of body are expected per window, at the least.
    static let bodyRateWindow = TimeAmount.seconds(5)

    private enum Phase {
        /// Waiting for a request's head; the deadline runs.
        case awaitingHead
        /// Reading a body: bytes seen in the current window.
        case readingBody(bytesThisWindow: Int, firstWindow: Bool)
        /// The request is whole; its answer is being made (no deadline: the route's own).
        case answering
    }

    private let limits: APILimits
    private let addresses: ConnectionsPerAddress
    private var phase = Phase.awaitingHead
    /// Requests whose head arrived and whose answer has not ended (more than one when pipelined).
    private var unanswered = 0
    private var timer: Scheduled<Void>?
    private var address: String?

    init(limits: APILimits, addresses: ConnectionsPerAddress) {
        self.limits = limits
        self.addresses = addresses
    }

    func channelActive(context: ChannelHandlerContext) {
        let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        guard addresses.open(address, maximum: limits.maximumConnectionsPerAddress) else {
            context.close(promise: nil)
            return
        }
        self.address = address
        armHeadDeadline(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        if let address {
            addresses.close(address)
            self.address = nil
        }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            unanswered += 1
            phase = .readingBody(bytesThisWindow: 0, firstWindow: true)
            armBodyWindow(context: context)
        case .body(let buffer):
            if case .readingBody(let bytes, let first) = phase {
                phase = .readingBody(bytesThisWindow: bytes + buffer.readableBytes, firstWindow: first)
            }
        case .end:
            phase = .answering
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            unanswered = max(0, unanswered - 1)
            // Once every request has its answer, the next head is due within the deadline.
            if case .answering = phase, unanswered == 0 { armHeadDeadline(context: context) }
        }
        context.write(data, promise: promise)
    }

    private func armHeadDeadline(context: ChannelHandlerContext) {
        phase = .awaitingHead
        timer?.cancel()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: TimeAmount(limits.requestHeadTimeout)) {
            let (handler, context) = loopBound.value
            guard case .awaitingHead = handler.phase else { return }
            context.close(promise: nil)
        }
    }

    private func armBodyWindow(context: ChannelHandlerContext) {
        timer?.cancel()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: Self.bodyRateWindow) {
            let (handler, context) = loopBound.value
            guard case .readingBody(let bytes, let first) = handler.phase else { return }
            let expected = handler.limits.minimumBodyRate * Int(Self.bodyRateWindow.nanoseconds / 1_000_000_000)
            if !first, bytes < expected {
                context.close(promise: nil)
                return
            }
            handler.phase = .readingBody(bytesThisWindow: 0, firstWindow: false)
            handler.armBodyWindow(context: context)
        }
    }
}

/// Connections open per client address, shared by every connection of one listener. Holds an
/// entry only while its address has a connection open, so its size is bounded by the
/// listener's connection limit.
final class ConnectionsPerAddress: Sendable {
    private let open = NIOLockedValueBox<[String: Int]>([:])

    /// Counts a new connection from `address`; `false` (and nothing counted) past `maximum`.
    func open(_ address: String, maximum: Int) -> Bool {
        open.withLockedValue { table in
            let count = table[address, default: 0]
            guard count < maximum else { return false }
            table[address] = count + 1
            return true
        }
    }

    func close(_ address: String) {
        open.withLockedValue { table in
            let count = table[address, default: 1] - 1
            table[address] = count > 0 ? count : nil
        }
    }

    /// Connections open from `address` now.
    func count(_ address: String) -> Int {
        open.withLockedValue { $0[address, default: 0] }
    }
}
