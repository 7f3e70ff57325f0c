import HeraldCore
import NIOCore

/// Opens a tunnel through an HTTP proxy with `CONNECT host:port` (RFC 9110 §9.3.6), then hands
/// the channel to `established`, which adds TLS and HTTP/2 behind it, and removes itself.
final class HTTPConnectProxyHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let target: String
    private let authorization: String?
    private let timeout: TimeAmount
    private let established: (Channel) throws -> Void
    private let failed: (String) -> Void
    private var response = ByteBuffer()
    private var searched = 0
    private var done = false
    private var timer: Scheduled<Void>?

    /// - Parameters:
    ///   - target: `host:port` to tunnel to.
    ///   - authorization: a `Proxy-Authorization` value, e.g. `Basic …`.
    ///   - timeout: how long the proxy may take to answer.
    ///   - failed: called once, with why, when no tunnel is made (the channel is then closed).
    init(
        target: String, authorization: String?, timeout: TimeAmount,
        established: @escaping (Channel) throws -> Void, failed: @escaping (String) -> Void
    ) {
        self.target = target
        self.authorization = authorization
        self.timeout = timeout
        self.established = established
        self.failed = failed
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let timeout = self.timeout
        timer = context.eventLoop.scheduleTask(in: timeout) {
            handler.value.fail(bound.value, "the proxy did not answer CONNECT within \(timeout)")
        }
        if context.channel.isActive { sendConnect(context: context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done { fail(context, "the proxy closed the connection before answering CONNECT \(target)") }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done { fail(context, "the connection to the proxy failed: \(error)") } else { context.fireErrorCaught(error) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendConnect(context: context)
        context.fireChannelActive()
    }

    private func sendConnect(context: ChannelHandlerContext) {
        var request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        request += "\r\n"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: request)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        response.writeBuffer(&bytes)
        let view = response.readableBytesView
        // Search only what arrived since the last read (and 3 bytes before): linear in the answer.
        let from = view.index(view.startIndex, offsetBy: max(0, searched - 3))
        searched = view.count
        guard let end = view[from...].firstRange(of: Array("\r\n\r\n".utf8)) else {
            if response.readableBytes > 16 << 10 { fail(context, "the proxy's answer to CONNECT is too long") }
            return
        }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        // The proxy's words reach logs and terminals: escaped and cut short.
        let statusLine = PeerText(head.split(separator: "\r\n", maxSplits: 1).first ?? "", limit: 200).description
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1] == "200" else {
            fail(context, "the proxy refused CONNECT \(target): \(statusLine.isEmpty ? "no status line" : statusLine)")
            return
        }
        done = true
        timer?.cancel()
        response.moveReaderIndex(to: response.readerIndex + end.upperBound - view.startIndex)
        let leftover = response
        do {
            try established(context.channel)
        } catch {
            failed("the tunnel through the proxy could not be set up: \(error)")
            context.close(promise: nil)
            return
        }
        context.pipeline.syncOperations.removeHandler(self, promise: nil)
        if leftover.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(leftover)) }
    }

    private func fail(_ context: ChannelHandlerContext, _ message: String) {
        guard !done else { return }
        done = true
        timer?.cancel()
        failed(message)
        context.close(promise: nil)
    }
}
