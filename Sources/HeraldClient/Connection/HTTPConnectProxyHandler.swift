import NIOCore

/// Opens a tunnel through an HTTP proxy with `CONNECT host:port` (RFC 9110 §9.3.6), then hands
/// the channel to `established`, which adds TLS and HTTP/2 behind it, and removes itself.
final class HTTPConnectProxyHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct ProxyError: Error, CustomStringConvertible {
        var description: String
    }

    private let target: String
    private let authorization: String?
    private let established: (Channel) throws -> Void
    private var response = ByteBuffer()
    private var done = false

    /// - Parameters:
    ///   - target: `host:port` to tunnel to.
    ///   - authorization: a `Proxy-Authorization` value, e.g. `Basic …`.
    init(target: String, authorization: String?, established: @escaping (Channel) throws -> Void) {
        self.target = target
        self.authorization = authorization
        self.established = established
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { sendConnect(context: context) }
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
        guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if response.readableBytes > 16 << 10 { fail(context, "the proxy's answer to CONNECT is too long") }
            return
        }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1] == "200" else {
            fail(context, "the proxy refused CONNECT \(target): \(statusLine.isEmpty ? "no status line" : statusLine)")
            return
        }
        done = true
        response.moveReaderIndex(to: response.readerIndex + end.upperBound - view.startIndex)
        let leftover = response
        do {
            try established(context.channel)
        } catch {
            context.fireErrorCaught(error)
            return
        }
        context.pipeline.syncOperations.removeHandler(self, promise: nil)
        if leftover.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(leftover)) }
    }

    private func fail(_ context: ChannelHandlerContext, _ message: String) {
        done = true
        context.fireErrorCaught(ProxyError(description: message))
        context.close(promise: nil)
    }
}
