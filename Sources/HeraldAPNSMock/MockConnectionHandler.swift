import HeraldCore
import HeraldHTTP2
import HeraldIdentity
import Logging
import NIOCore
import NIOHPACK
import NIOSSL
import NIOTLS
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Serves one client connection: reads request frames, answers like APNs, and plays the script's
/// faults. Built on ``HTTP2Connection`` over the TLS bytes, so the mock is fast enough to be a
/// benchmark target, and bounded by ``MockAPNSServer/Limits`` whatever the client sends.
final class MockConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Shared: Sendable {
        var state: MockServerState
        var channels: MockChannelStore
        var validator: MockRequestValidator
        var sandbox: Bool
        var mutualTLS: Bool
        var maximumConcurrentStreams: Int
        var limits: MockAPNSServer.Limits
        var now: @Sendable () -> Date
        var logger: Logger
    }

    struct PendingStream {
        var head: MockRequestHead
        var body: [UInt8] = []
        var bodySize = 0
        var fault: MockFault?
        /// The whole request arrived; its answer is made, or held by a fault.
        var complete = false
        var openedAt: NIODeadline
        /// Bytes of the server-wide request budget the stream holds.
        var reserved: Int
    }

    /// The largest body kept: just past the largest limit, enough to record and to size-check.
    static let keptBodyBytes = PushType.voip.maximumPayloadSize + 2

    let shared: Shared
    let connection: Int
    var http2: HTTP2Connection
    var auth = MockConnectionAuth()
    /// Makes up the ids APNs would (apns-id, apns-unique-id, apns-request-id).
    var ids = MockIdentifiers()
    var streams: [HTTP2StreamNumber: PendingStream] = [:]
    private var streamsSeen = 0
    private var lastProcessedStreamID: HTTP2StreamNumber = 0
    var goingAway = false
    private var closing = false
    var output = ByteBuffer()
    private var events: [HTTP2Connection.Event] = []
    private let connectionScript: MockConnectionScript
    var context: ChannelHandlerContext?
    private var started = false
    private let acceptedAt = NIODeadline.now()
    private var lastActivity = NIODeadline.now()
    private var timer: RepeatedTask?

    init(shared: Shared) {
        self.shared = shared
        self.connection = shared.state.nextConnectionNumber()
        self.connectionScript = shared.state.connectionScript(connection: connection)
        var settings = HTTP2Connection.Settings()
        settings.maxConcurrentStreams = shared.maximumConcurrentStreams
        settings.initialWindowSize = 1 << 20
        settings.maxHeaderListSize = 16 << 10
        self.http2 = HTTP2Connection(role: .server, local: settings, limits: Self.http2Limits(shared.limits))
        output.reserveCapacity(64 << 10)
    }

    static func http2Limits(_ limits: MockAPNSServer.Limits) -> HTTP2Connection.Limits {
        var http2 = HTTP2Connection.Limits()
        http2.maximumHeaderBlockSize = limits.maximumHeaderBlockSize
        http2.maximumContinuationFrames = limits.maximumContinuationFrames
        http2.headerBlockTimeout = TimeAmount(limits.headerBlockTimeout)
        http2.peerResets = HTTP2RateLimit(limits.clientResets.count, per: TimeAmount(limits.clientResets.window))
        http2.controlFrames = HTTP2RateLimit(limits.controlFrames.count, per: TimeAmount(limits.controlFrames.window))
        http2.streamErrors = HTTP2RateLimit(limits.streamErrors.count, per: TimeAmount(limits.streamErrors.window))
        return http2
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let limits = shared.limits
        let shortest = [limits.handshakeTimeout, limits.idleTimeout, limits.requestTimeout, limits.headerBlockTimeout].min()!
        let interval = min(max(TimeAmount(shortest / 4), .milliseconds(10)), .seconds(1))
        // Cancelled when the channel closes, which ends the reference cycle.
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in handler.value.tick() }
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        http2.start(into: &output)
        flush(context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event, shared.mutualTLS {
            if let tls = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
                let peer = tls.peerCertificate, let certificate = try? Certificate(derEncoded: peer.toDERBytes())
            {
                auth.certificate = (certificate.apnsSubjectUID, certificate.apnsListedTopics)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }  // TLS may still deliver bytes while it closes
        var bytes = unwrapInboundIn(data)
        do {
            try http2.receive(&bytes, now: .now(), outputWritable: context.channel.isWritable, events: &events, output: &output)
        } catch {
            fail(context, error)
            return
        }
        for event in events { handle(event, context: context) }
        events.removeAll(keepingCapacity: true)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush(context)
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        for stream in streams.values { shared.state.releaseRequestBytes(stream.reserved) }
        streams = [:]
        context.fireChannelInactive()
    }

    // MARK: HTTP/2 events

    private func handle(_ event: HTTP2Connection.Event, context: ChannelHandlerContext) {
        switch event {
        case .headers(let streamID, let headers, let endStream):
            lastActivity = .now()
            receivedRequest(headers, streamID: streamID, endStream: endStream, context: context)
        case .trailers(let streamID, _):
            complete(streamID, context: context)
        case .data(let streamID, let data, let endStream):
            guard var stream = streams[streamID], !stream.complete else { return }
            stream.bodySize += data.readableBytes
            let keep = min(data.readableBytes, max(0, Self.keptBodyBytes - stream.body.count))
            if keep > 0 {
                guard shared.state.reserveRequestBytes(keep) else {
                    // Over the server-wide budget: not processed, the client may send it again.
                    drop(streamID)
                    refuse(streamID)
                    return
                }
                stream.reserved += keep
                stream.body.append(contentsOf: data.readableBytesView.prefix(keep))
            }
            streams[streamID] = stream
            if endStream {
                complete(streamID, context: context)
            } else if stream.bodySize > PushType.voip.maximumPayloadSize {
                // Too large whatever the push type: answer now rather than read the rest.
                answer(streamID, context: context)
                http2.resetStream(streamID, code: .noError, into: &output)
            }
        case .streamReset(let streamID, let code, let byPeer):
            if code == .refusedStream && !byPeer { shared.state.countRefusedStream() }
            drop(streamID)
        case .settings, .settingsAcknowledged, .pingAck, .goAway:
            break
        }
    }

    // MARK: Requests

    private func receivedRequest(_ headers: HPACKHeaders, streamID: HTTP2StreamNumber, endStream: Bool, context: ChannelHandlerContext) {
        guard !goingAway else { return }
        shared.state.countRequest()
        let index = streamsSeen
        streamsSeen += 1

        switch connectionScript.event(at: index) {
        case .goAway(let reason):
            sendGoAway(reason: reason, context: context)
            return
        case .dropConnection:
            context.close(promise: nil)
            return
        case .changeLimits(let limits):
            for limit in limits { setStreamLimit(limit) }
        case .none:
            break
        }

        // A client that does not read its answers, or gives no window for them, gets no more:
        // the request is refused (it may send it again), so small requests cannot pile up
        // large answers.
        if !context.channel.isWritable || output.readableBytes + http2.pendingBodyBytes > shared.limits.maximumQueuedResponseBytes {
            refuse(streamID)
            return
        }
        let head = MockRequestHead(headers)
        guard shared.state.reserveRequestBytes(head.size) else {
            refuse(streamID)
            return
        }
        var stream = PendingStream(head: head, openedAt: .now(), reserved: head.size)
        if let token = head.token {
            stream.fault = shared.state.fault(for: token)
        }
        let answerBeforeBody: Bool
        switch MockRequestPlan(fault: stream.fault) {
        case .dropConnection:
            shared.state.releaseRequestBytes(stream.reserved)
            context.close(promise: nil)
            return
        case .goAway(let reason):
            shared.state.releaseRequestBytes(stream.reserved)
            sendGoAway(reason: reason, context: context)
            return
        case .refuse:
            shared.state.releaseRequestBytes(stream.reserved)
            refuse(streamID)
            return
        case .accept(let newStreamLimit, let early):
            if let newStreamLimit { setStreamLimit(newStreamLimit) }
            answerBeforeBody = early
        }
        lastProcessedStreamID = streamID
        streams[streamID] = stream
        if http2.streamLimitChanged {
            for (limit, peak) in http2.peakPeerStreamsByLimit where limit != shared.maximumConcurrentStreams {
                shared.state.openStreams(peak, underLimit: limit)
            }
        }
        if answerBeforeBody {
            // Answer now, then reset the stream with NO_ERROR: the client must take the answer.
            answer(streamID, context: context)
            http2.resetStream(streamID, code: .noError, into: &output)
            return
        }
        if endStream { complete(streamID, context: context) }
    }

    /// The request on `streamID` arrived whole: answer it, unless a fault holds the answer.
    private func complete(_ streamID: HTTP2StreamNumber, context: ChannelHandlerContext) {
        guard let stream = streams[streamID], !stream.complete else { return }
        switch stream.fault {
        case .noResponse:
            streams[streamID]?.complete = true  // hangs until the client gives up
        case .delay(let delay):
            streams[streamID]?.complete = true
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                guard let context = handler.value.context else { return }
                handler.value.answer(streamID, context: context, ignoringFault: true)
                handler.value.flush(context)
            }
        default:
            answer(streamID, context: context)
        }
    }

    /// Refuses a stream unprocessed: the client may send it again.
    private func refuse(_ streamID: HTTP2StreamNumber) {
        shared.state.countRefusedStream()
        http2.resetStream(streamID, code: .refusedStream, into: &output)
    }

    /// Forgets a stream's request, giving back its share of the request budget.
    func drop(_ streamID: HTTP2StreamNumber) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        shared.state.releaseRequestBytes(stream.reserved)
        if streams.isEmpty { lastActivity = .now() }
    }

    // MARK: Connection events

    private func setStreamLimit(_ limit: Int) {
        // Binds once the client acknowledges it (RFC 9113 §6.5.3).
        http2.changeSettings([(.maxConcurrentStreams, limit)], into: &output)
    }

    private func sendGoAway(reason: String, context: ChannelHandlerContext) {
        goingAway = true
        var debug = JSONWriter(capacity: 32)
        debug.beginObject()
        debug.key("reason")
        debug.string(reason)
        debug.endObject()
        http2.writeGoAway(lastStreamID: lastProcessedStreamID, code: .noError, debugData: debug.bytes, into: &output)
        // Streams above the last processed one were never started here.
        for id in streams.keys where id > lastProcessedStreamID { drop(id) }
        closeIfGoneAway(context)
    }

    func closeIfGoneAway(_ context: ChannelHandlerContext) {
        guard goingAway, !closing else { return }
        // Close once every stream that will be answered has been (hung streams do not count),
        // and what was written has gone out.
        guard streams.values.allSatisfy({ $0.complete && $0.fault == .noResponse }) else { return }
        closing = true
        closeAfterFlush(context)
    }

    private func closeAfterFlush(_ context: ChannelHandlerContext) {
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(output), promise: written)
        output.clear()
        let channel = context.channel
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }

    /// A connection error: GOAWAY with its code, then close.
    private func fail(_ context: ChannelHandlerContext, _ error: HTTP2ConnectionError) {
        guard !closing else { return }
        closing = true
        shared.logger.debug("client broke HTTP/2", metadata: ["error": "\(error)"])
        http2.writeGoAway(for: error, into: &output)
        flush(context)
        context.close(promise: nil)
    }

    func flush(_ context: ChannelHandlerContext) {
        guard output.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(output), promise: nil)
        output.clear(minimumCapacity: 16 << 10)
        // What the client has not taken: answers on the socket while it is not writable, and
        // bodies waiting for window (counted only when there is something to see).
        var queued = http2.pendingBodyBytes
        if !context.channel.isWritable { queued += (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0 }
        if queued > 0 { shared.state.sawQueuedResponseBytes(queued) }
    }

    // MARK: Timer

    /// Deadlines: the handshake, idle connections, requests that never finish arriving, and
    /// header blocks left open.
    private func tick() {
        guard let context, !closing else { return }
        let now = NIODeadline.now()
        let limits = shared.limits
        if !http2.isReady {
            if now - acceptedAt > TimeAmount(limits.handshakeTimeout) {
                shared.logger.debug("client did not complete TLS and the HTTP/2 preface in time")
                closing = true
                context.close(promise: nil)
            }
            return
        }
        do {
            try http2.checkTimeouts(now: now)
        } catch {
            fail(context, error)
            return
        }
        let requestTimeout = TimeAmount(limits.requestTimeout)
        for (id, stream) in streams where !stream.complete && now - stream.openedAt > requestTimeout {
            drop(id)
            http2.resetStream(id, code: .cancel, into: &output)
        }
        if streams.isEmpty, http2.openStreamCount == 0, now - lastActivity > TimeAmount(limits.idleTimeout) {
            goingAway = true
            http2.writeGoAway(code: .noError, debugData: Array(#"{"reason":"IdleTimeout"}"#.utf8), into: &output)
            closeIfGoneAway(context)
            return
        }
        flush(context)
    }
}
