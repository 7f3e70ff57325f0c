import HummingbirdCore
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// A mock's connections on one port: TLS, then by ALPN either the mock's own HTTP/2 server
/// (``MockHTTP2Handler``, `h2`) or Hummingbird's HTTP/1.1 pipeline (`http/1.1`, or no ALPN).
/// A Hummingbird child channel, so the server's connection bound and graceful shutdown hold for both.
struct MockHTTPChannel: ServerChildChannel {
    /// How long TLS and ALPN may take before the connection is closed.
    static let negotiationTimeout: TimeAmount = .seconds(10)

    enum Negotiated: Sendable {
        case http1(HTTP1Channel.Value)
        case http2
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let sslContext: NIOSSLContext
    let http1: HTTP1Channel
    let handler: any MockHTTPHandler
    let limits: MockHTTP2Limits
    let counters: MockHTTP2Counters

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // Answers go out as written, as the APNs mock's listener does (Hummingbird leaves Nagle on).
            try channel.syncOptions?.setOption(.tcpOption(.tcp_nodelay), value: 1)
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(NIOSSLServerHandler(context: sslContext))
            let alpn = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                switch result {
                case .negotiated("h2"):
                    return channel.eventLoop.makeCompletedFuture {
                        // Stop reading from a peer while answers it has not read pile up past the bound.
                        let queued = max(limits.maximumQueuedResponseBytes, 1024)
                        try channel.syncOptions?.setOption(.writeBufferWaterMark, value: .init(low: queued / 2, high: queued))
                        if let size = limits.socketSendBufferSize {
                            try channel.syncOptions?.setOption(.socketOption(.so_sndbuf), value: SocketOptionValue(size))
                        }
                        try channel.pipeline.syncOperations.addHandler(BackPressureHandler())
                        try channel.pipeline.syncOperations.addHandler(MockHTTP2Handler(handler: handler, limits: limits, counters: counters, logger: logger))
                        return .http2
                    }
                case .negotiated("http/1.1"), .fallback:
                    return http1.setup(channel: channel, logger: logger).map { .http1($0) }
                case .negotiated:
                    return channel.close().flatMapThrowing { throw MockHTTPSHostError(description: "negotiated an unknown protocol") }
                }
            }
            try sync.addHandler(alpn)
            let negotiated = alpn.protocolNegotiationResult
            let timeout = channel.eventLoop.scheduleTask(in: Self.negotiationTimeout) { channel.close(promise: nil) }
            negotiated.whenComplete { _ in timeout.cancel() }
            return Value(negotiated: negotiated, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1(let http1Value):
                await http1.handle(value: http1Value, logger: logger)
            case .http2:
                // MockHTTP2Handler serves it on the event loop; this task only lasts as long.
                let channel = value.channel
                await withTaskCancellationHandler {
                    try? await channel.closeFuture.get()
                } onCancel: {
                    channel.close(promise: nil)
                }
            }
        } catch {
            logger.debug("mock connection ended before it negotiated a protocol", metadata: ["error": "\(error)"])
        }
    }
}
