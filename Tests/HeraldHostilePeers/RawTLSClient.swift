import HeraldHTTP2
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import NIOTLS

/// A TLS client that writes whatever bytes a test gives it and keeps what comes back: an HTTP/2
/// client with no rules, for attacking a server. It can stop reading altogether.
package final class RawTLSClient: Sendable {
    private let channel: any Channel
    private let received: NIOLockedValueBox<(bytes: ByteBuffer, closed: Bool)>
    /// Encodes header blocks for ``request(stream:fields:body:)`` (NIOHPACK's encoder).
    private let encoder = NIOLockedValueBox(HPACKEncoder(allocator: ByteBufferAllocator()))

    private init(channel: any Channel, received: NIOLockedValueBox<(bytes: ByteBuffer, closed: Bool)>) {
        self.channel = channel
        self.received = received
    }

    /// Connects to 127.0.0.1:`port` with ALPN h2.
    ///
    /// - Parameters:
    ///   - reading: false: never read from the socket after the TLS handshake.
    ///   - receiveBuffer: a small SO_RCVBUF, so a client that does not read fills up quickly.
    package static func connect(
        port: Int, trustRoots: [NIOSSLCertificate], reading: Bool = true, receiveBuffer: Int? = nil
    ) async throws -> RawTLSClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(trustRoots)
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let received = NIOLockedValueBox((bytes: ByteBuffer(), closed: false))
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if let receiveBuffer { bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer)) }
        let channel = try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                    try channel.pipeline.syncOperations.addHandler(Collector(received: received, reading: reading))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawTLSClient(channel: channel, received: received)
    }

    /// Writes and flushes `bytes`; the future completes when they are written to the socket.
    @discardableResult
    package func send(_ bytes: ByteBuffer) -> EventLoopFuture<Void> {
        channel.writeAndFlush(bytes)
    }

    /// Writes `write`'s bytes.
    @discardableResult
    package func send(_ write: (inout ByteBuffer) -> Void) -> EventLoopFuture<Void> {
        var bytes = ByteBuffer()
        write(&bytes)
        return send(bytes)
    }

    /// The connection preface and empty SETTINGS, and an ACK of the server's.
    package func sendPreface() {
        send { buffer in
            buffer.writeBytes(http2ClientPreface)
            buffer.writeHTTP2Settings([])
            buffer.writeHTTP2SettingsAck()
        }
    }

    /// The bytes of a HEADERS frame (and DATA, if `body`) for a request on `stream`.
    package func request(stream: UInt32, fields: [(String, String)], body: [UInt8]?) -> ByteBuffer {
        var block = ByteBuffer()
        encoder.withLockedValue { try! $0.encode(headers: HPACKHeaders(fields), to: &block) }
        var bytes = ByteBuffer()
        bytes.writeHTTP2Headers(streamID: stream, block: block, endStream: body == nil, maximumFrameSize: 16_384)
        if let body { bytes.writeHTTP2Data(streamID: stream, bytes: body, endStream: true) }
        return bytes
    }

    /// The frames received so far.
    package var frames: [HTTP2WireFrame] {
        var parser = HTTP2FrameParser(maximumFrameSize: 1 << 24)
        var bytes = received.withLockedValue { $0.bytes }
        parser.append(&bytes)
        var frames: [HTTP2WireFrame] = []
        while let frame = try? parser.next() { frames.append(frame) }
        return frames
    }

    /// Whether the server closed the connection.
    package var isClosed: Bool { received.withLockedValue { $0.closed } }

    /// The error code of the GOAWAY received, if any.
    package var goAwayCode: HTTP2ErrorCode? {
        frames.last { $0.type == HTTP2FrameType.goAway.rawValue }.map { frame in
            var payload = frame.payload
            payload.moveReaderIndex(forwardBy: 4)
            return HTTP2ErrorCode(payload.readInteger(as: UInt32.self)!)
        }
    }

    /// Waits, polling every 10 ms for at most `seconds`, until `condition` holds. Returns whether it did.
    package func wait(seconds: Int = 20, until condition: (RawTLSClient) -> Bool) async -> Bool {
        for _ in 0..<(seconds * 100) {
            if condition(self) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(self)
    }

    package func close() async {
        try? await channel.close()
    }

    private final class Collector: ChannelInboundHandler, ChannelOutboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundIn = ByteBuffer
        let received: NIOLockedValueBox<(bytes: ByteBuffer, closed: Bool)>
        let reading: Bool
        var handshaken = false

        init(received: NIOLockedValueBox<(bytes: ByteBuffer, closed: Bool)>, reading: Bool) {
            self.received = received
            self.reading = reading
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            received.withLockedValue { _ = $0.bytes.writeBuffer(&bytes) }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is TLSUserEvent { handshaken = true }
            context.fireUserInboundEventTriggered(event)
        }

        func read(context: ChannelHandlerContext) {
            // A client that does not read stops asking the socket for bytes once TLS is up.
            if reading || !handshaken { context.read() }
        }

        func channelInactive(context: ChannelHandlerContext) {
            received.withLockedValue { $0.closed = true }
            context.fireChannelInactive()
        }
    }
}
