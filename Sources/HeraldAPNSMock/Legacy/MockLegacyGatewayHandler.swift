import HeraldLegacyWire
import NIOCore

/// Asks every open gateway connection to answer status 10 (shutdown) and close.
struct MockLegacyShutdownEvent: Sendable {}

/// One connection of the mock gateway: accepts what parses and what the script allows; answers
/// the first invalid or scripted notification with an error response and closes, discarding
/// everything after it, as APNs did (apns-spec §4.4, §4.5).
final class MockLegacyGatewayHandler: ChannelInboundHandler {
    typealias InboundIn = LegacyFrameParser.Parsed

    private let state: MockLegacyState
    /// The identifier of the last notification accepted on this connection, named by status 10.
    private var lastAccepted: UInt32 = 0
    private var answered = false

    init(state: MockLegacyState) {
        self.state = state
    }

    func channelActive(context: ChannelHandlerContext) {
        state.opened(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        state.closed(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }  // APNs discards everything after the failing notification
        switch unwrapInboundIn(data) {
        case .frame(let frame):
            switch state.decide(frame) {
            case .accept:
                lastAccepted = frame.identifier ?? 0
            case .acceptAndShutDown:
                lastAccepted = frame.identifier ?? 0
                answer(LegacyErrorResponse(status: .shutdown, identifier: lastAccepted), context: context)
            case .reject(let status):
                answer(LegacyErrorResponse(status: status, identifier: frame.identifier ?? 0), context: context)
            }
        case .invalid(let response):
            state.invalid(response)
            answer(response, context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is MockLegacyShutdownEvent, !answered {
            answer(LegacyErrorResponse(status: .shutdown, identifier: lastAccepted), context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Writes the 6-byte response and closes, after the scripted delay.
    private func answer(_ response: LegacyErrorResponse, context: ChannelHandlerContext) {
        answered = true
        if response.status == .shutdown { state.sentShutdown() }
        var bytes = context.channel.allocator.buffer(capacity: 6)
        response.write(into: &bytes)
        let delay = state.errorResponseDelay
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let send = {
            let context = loopBound.value
            context.writeAndFlush(NIOAny(bytes)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
        if delay > .zero {
            context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) { send() }
        } else {
            send()
        }
    }
}
