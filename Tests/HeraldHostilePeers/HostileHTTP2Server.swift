import HeraldHTTP2
import HeraldAPNSMock
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL

/// An HTTP/2 server over TLS that answers at the frame level as a test's script says: for seeing
/// how a client takes what a well-behaved server never sends (floods, 1xx, out-of-range numbers,
/// escape sequences, malformed heads). It reads requests with its own parser and NIOHPACK's
/// decoder, acknowledges SETTINGS, and records the GOAWAY codes clients send it.
package final class HostileHTTP2Server: Sendable {
    /// A request as the server read it.
    package struct Request: Sendable {
        package var streamID: UInt32
        package var headers: HPACKHeaders
        package var body: [UInt8]
    }

    /// What the script is told about.
    package enum Event: Sendable {
        /// A client connected (after TLS): write the server's SETTINGS and anything else.
        case connected
        /// A whole request arrived.
        case request(Request)
        /// Any frame the client sent (after the above for its last frame).
        case frame(type: UInt8, flags: UInt8, streamID: UInt32)
    }

    /// Where the script writes: raw frames, or helpers that encode header blocks.
    package struct Writer {
        package var bytes = ByteBuffer()
        /// Closes the connection once what is written is flushed (an answer cut off mid-way).
        package var closesConnection = false
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())

        /// A HEADERS frame with `fields` (split into CONTINUATION past 16 KiB).
        package mutating func headers(_ fields: [(String, String)], streamID: UInt32, endStream: Bool) {
            var block = ByteBuffer()
            try! encoder.encode(headers: HPACKHeaders(fields), to: &block)
            bytes.writeHTTP2Headers(streamID: streamID, block: block, endStream: endStream, maximumFrameSize: 16_384)
        }

        /// A DATA frame.
        package mutating func data(_ body: [UInt8], streamID: UInt32, endStream: Bool = true) {
            bytes.writeHTTP2Data(streamID: streamID, bytes: body, endStream: endStream)
        }

        /// An error answer like APNs's: status, apns-id, and a JSON body.
        package mutating func rejection(_ json: String, status: Int, streamID: UInt32, apnsID: String = "00000000-0000-4000-8000-000000000000") {
            headers([(":status", String(status)), ("content-type", "application/json"), ("apns-id", apnsID)], streamID: streamID, endStream: false)
            data(Array(json.utf8), streamID: streamID)
        }
    }

    package typealias Script = @Sendable (Event, inout Writer) -> Void

    package let authority: MockCertificateAuthority
    private let script: Script
    private let channel = NIOLockedValueBox<(any Channel)?>(nil)
    private let goAways = NIOLockedValueBox<[HTTP2ErrorCode]>([])
    private let connectionTotal = NIOLockedValueBox(0)

    package init(script: @escaping Script) throws {
        self.authority = try MockCertificateAuthority()
        self.script = script
    }

    /// A server that sends SETTINGS (100 concurrent streams) and answers every request with `answer`.
    package static func answering(_ answer: @escaping @Sendable (Request, inout Writer) -> Void) throws -> HostileHTTP2Server {
        try HostileHTTP2Server { event, writer in
            switch event {
            case .connected: writer.bytes.writeHTTP2Settings([(.maxConcurrentStreams, 100)])
            case .request(let request): answer(request, &writer)
            case .frame: break
            }
        }
    }

    /// Starts listening on 127.0.0.1 and returns the port.
    @discardableResult
    package func start() async throws -> Int {
        let identity = try authority.issueServerIdentity()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.tlsCertificateChain.map { .certificate($0) }, privateKey: .privateKey(identity.tlsPrivateKey)
        )
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let script = self.script
        let goAways = self.goAways
        let connections = self.connectionTotal
        let bound = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    connections.withLockedValue { $0 += 1 }
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.addHandler(Connection(script: script, goAways: goAways))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        channel.withLockedValue { $0 = bound }
        return bound.localAddress!.port!
    }

    package func stop() async throws {
        try await channel.withLockedValue { $0 }?.close()
    }

    package var port: Int { channel.withLockedValue { $0?.localAddress?.port } ?? 0 }
    package var trustRoots: [NIOSSLCertificate] { [try! authority.tlsCertificate] }
    /// The error codes of the GOAWAY frames clients sent.
    package var receivedGoAwayCodes: [HTTP2ErrorCode] { goAways.withLockedValue { $0 } }
    package var connectionCount: Int { connectionTotal.withLockedValue { $0 } }

    private final class Connection: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let script: Script
        let goAways: NIOLockedValueBox<[HTTP2ErrorCode]>
        var preface = http2ClientPreface.count
        var parser = HTTP2FrameParser(maximumFrameSize: 1 << 24)
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var block: (streamID: UInt32, endStream: Bool, bytes: ByteBuffer)?
        var requests: [UInt32: Request] = [:]
        var writer = Writer()

        init(script: @escaping Script, goAways: NIOLockedValueBox<[HTTP2ErrorCode]>) {
            self.script = script
            self.goAways = goAways
        }

        func channelActive(context: ChannelHandlerContext) {
            script(.connected, &writer)
            flush(context)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            if preface > 0 {
                let count = min(preface, bytes.readableBytes)
                bytes.moveReaderIndex(forwardBy: count)
                preface -= count
            }
            parser.append(&bytes)
            while let frame = try? parser.next() {
                handle(frame)
                script(.frame(type: frame.type, flags: frame.flags, streamID: frame.streamID), &writer)
            }
            flush(context)
        }

        private func handle(_ frame: HTTP2WireFrame) {
            var payload = frame.payload
            switch HTTP2FrameType(rawValue: frame.type) {
            case .settings where !frame.has(HTTP2Flag.ack):
                writer.bytes.writeHTTP2SettingsAck()
            case .goAway:
                _ = payload.readInteger(as: UInt32.self)
                if let code = payload.readInteger(as: UInt32.self) { goAways.withLockedValue { $0.append(HTTP2ErrorCode(code)) } }
            case .headers:
                block = (frame.streamID, frame.has(HTTP2Flag.endStream), payload)
                if frame.has(HTTP2Flag.endHeaders) { headerBlockEnded() }
            case .continuation:
                block?.bytes.writeBuffer(&payload)
                if frame.has(HTTP2Flag.endHeaders) { headerBlockEnded() }
            case .data:
                requests[frame.streamID]?.body.append(contentsOf: payload.readableBytesView)
                if frame.has(HTTP2Flag.endStream), let request = requests.removeValue(forKey: frame.streamID) {
                    script(.request(request), &writer)
                }
            default:
                break
            }
        }

        private func headerBlockEnded() {
            guard var pending = block, let headers = try? decoder.decodeHeaders(from: &pending.bytes) else { return }
            block = nil
            let request = Request(streamID: pending.streamID, headers: headers, body: [])
            if pending.endStream {
                script(.request(request), &writer)
            } else {
                requests[pending.streamID] = request
            }
        }

        private func flush(_ context: ChannelHandlerContext) {
            if writer.bytes.readableBytes > 0 {
                context.writeAndFlush(wrapOutboundOut(writer.bytes), promise: nil)
                writer.bytes = ByteBuffer()
            }
            if writer.closesConnection {
                writer.closesConnection = false
                context.close(promise: nil)
            }
        }
    }
}
