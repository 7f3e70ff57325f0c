import Foundation
import HeraldAPNSMock
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// An HTTP/2 client built on swift-nio-http2, independent of Herald's HTTP/2 layer: it sends any
/// request (even ones Herald's client would refuse) and checks the server strictly.
final class NIOHTTP2TestClient: @unchecked Sendable {
    struct Response {
        var status: Int
        var headers: HPACKHeaders
        var body: String
        var reason: String? { (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["reason"] as? String }
    }

    private let channel: Channel
    private let collector: ResponseCollector

    private init(channel: Channel, collector: ResponseCollector) {
        self.channel = channel
        self.collector = collector
    }

    static func connect(to server: MockAPNSServer) async throws -> NIOHTTP2TestClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(server.trustRoots)
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let collector = ResponseCollector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                    try sync.addHandler(NIOHTTP2Handler(mode: .client))
                    try sync.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: server.port).get()
        return NIOHTTP2TestClient(channel: channel, collector: collector)
    }

    func request(_ headers: [(String, String)], body: [UInt8]? = nil) async throws -> Response {
        let promise = channel.eventLoop.makePromise(of: Response.self)
        let collector = self.collector
        let channel = self.channel
        channel.eventLoop.execute {
            collector.send(HPACKHeaders(headers), body: body, promise: promise, channel: channel)
        }
        return try await promise.futureResult.get()
    }

    func close() async throws {
        try await channel.close()
    }
}

private final class ResponseCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var nextStreamID = 1
    private var pending: [HTTP2StreamID: (promise: EventLoopPromise<NIOHTTP2TestClient.Response>, headers: HPACKHeaders?, body: ByteBuffer)] = [:]

    func send(_ headers: HPACKHeaders, body: [UInt8]?, promise: EventLoopPromise<NIOHTTP2TestClient.Response>, channel: Channel) {
        let id = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        pending[id] = (promise, nil, ByteBuffer())
        channel.write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: body == nil))), promise: nil)
        if let body {
            channel.write(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: true))), promise: nil)
        }
        channel.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard var entry = pending[frame.streamID] else { return }
        var end = false
        switch frame.payload {
        case .headers(let headers):
            entry.headers = headers.headers
            end = headers.endStream
        case .data(let data):
            if case .byteBuffer(var bytes) = data.data { entry.body.writeBuffer(&bytes) }
            end = data.endStream
        case .rstStream(let code):
            pending[frame.streamID] = nil
            entry.promise.fail(NIOHTTP2Errors.streamClosed(streamID: frame.streamID, errorCode: code))
            return
        default:
            break
        }
        pending[frame.streamID] = entry
        if end, let headers = entry.headers {
            pending[frame.streamID] = nil
            entry.promise.succeed(.init(status: Int(headers.first(name: ":status") ?? "") ?? 0, headers: headers, body: String(buffer: entry.body)))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        for entry in pending.values { entry.promise.fail(error) }
        pending = [:]
        context.close(promise: nil)
    }
}

/// An HTTP/2 server built on swift-nio-http2, independent of Herald's: it answers every request
/// with 200 and an apns-id, with a tiny stream window so clients must follow flow control.
final class NIOHTTP2TestServer: @unchecked Sendable {
    let authority: MockCertificateAuthority
    private var channel: Channel?
    let answered = NIOLockedValueBox(0)

    init() throws {
        authority = try MockCertificateAuthority()
    }

    func start(initialWindowSize: Int, maximumConcurrentStreams: Int) async throws -> Int {
        let identity = try authority.issueServerIdentity()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.tlsCertificateChain.map { .certificate($0) }, privateKey: .privateKey(identity.tlsPrivateKey)
        )
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let answered = self.answered
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: maximumConcurrentStreams),
            HTTP2Setting(parameter: .initialWindowSize, value: initialWindowSize),
        ]
        let connectionConfiguration = configuration
        let bound = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    try sync.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: connectionConfiguration))
                    try sync.addHandler(Responder(answered: answered))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        channel = bound
        return bound.localAddress!.port!
    }

    func stop() async throws {
        try await channel?.close()
    }

    private final class Responder: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame
        let answered: NIOLockedValueBox<Int>
        private var ids: [HTTP2StreamID: String] = [:]

        init(answered: NIOLockedValueBox<Int>) {
            self.answered = answered
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            switch frame.payload {
            case .headers(let headers):
                ids[frame.streamID] = headers.headers.first(name: "apns-id") ?? UUID().uuidString.lowercased()
                if headers.endStream { respond(frame.streamID, context: context) }
            case .data(let data):
                // Without NIO's stream multiplexer this handler pays back the windows itself.
                let size = data.data.readableBytes
                if size > 0 {
                    context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: size))), promise: nil)
                    if !data.endStream {
                        context.write(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .windowUpdate(windowSizeIncrement: size))), promise: nil)
                    }
                }
                if data.endStream { respond(frame.streamID, context: context) }
                context.flush()
            default:
                break
            }
        }

        private func respond(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
            let headers = HPACKHeaders([(":status", "200"), ("apns-id", ids.removeValue(forKey: streamID) ?? "")])
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true)))), promise: nil)
            answered.withLockedValue { $0 += 1 }
        }
    }
}
