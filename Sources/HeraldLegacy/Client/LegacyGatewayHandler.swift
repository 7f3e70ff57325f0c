import NIOCore
import NIOTLS

/// The thin handler of a gateway connection: tells the driver when TLS is up, which error
/// responses arrive and when the connection ends. It holds no protocol state.
final class LegacyGatewayHandler: ChannelInboundHandler {
    typealias InboundIn = LegacyErrorResponse

    private let driver: LegacyConnectionDriver
    private let connection: Int
    private var failure: String?

    init(driver: LegacyConnectionDriver, connection: Int) {
        self.driver = driver
        self.connection = connection
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent {
            driver.connectionReady(connection, channel: context.channel)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        driver.received(unwrapInboundIn(data), connection: connection)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // TLS failures, and bytes that are not an error response (a protocol error).
        if failure == nil { failure = "\(error)" }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        driver.connectionClosed(connection, reason: failure)
        context.fireChannelInactive()
    }
}
