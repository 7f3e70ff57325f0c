import HeraldHTTP2
import Logging
import NIOCore
import NIOHPACK

/// Serves one HTTP/2 connection of a mock (after TLS and ALPN): ``HTTP2Connection`` drives the
/// frames, each request read whole goes to the mock's ``MockHTTPHandler`` and its answer is
/// written. Modelled on the APNs mock's connection handler, and bounded by ``MockHTTP2Limits``
/// whatever the peer sends: no child channel or task per request.
final class MockHTTP2Handler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct PendingStream {
        var method: String
        var path: Substring
        var headers: HPACKHeaders
        var body = ByteBuffer()
        /// The route's bound on the body.
        var limit: Int
        /// The whole request arrived; its answer waits for a scripted delay.
        var complete = false
        var openedAt: NIODeadline
    }

    let handler: any MockHTTPHandler
    let limits: MockHTTP2Limits
    let counters: MockHTTP2Counters
    let logger: Logger
    private var http2: HTTP2Connection
    private var streams: [HTTP2StreamNumber: PendingStream] = [:]
    /// Body bytes held over `streams` (within ``MockHTTP2Limits/maximumBufferedBodyBytes``).
    private var bodyBytes = 0
    private var goingAway = false
    /// The highest stream handed to the routes and answered (or to be, after a delay): a
    /// scripted GOAWAY names it as the last one processed.
    private var lastProcessedStreamID: HTTP2StreamNumber = 0
    private var closing = false
    private var output = ByteBuffer()
    private var events: [HTTP2Connection.Event] = []
    private var context: ChannelHandlerContext?
    private var started = false
    private let acceptedAt = NIODeadline.now()
    private var lastActivity = NIODeadline.now()
    private var timer: RepeatedTask?

    init(handler: any MockHTTPHandler, limits: MockHTTP2Limits, counters: MockHTTP2Counters, logger: Logger) {
        self.handler = handler
        self.limits = limits
        self.counters = counters
        self.logger = logger
        var settings = HTTP2Connection.Settings()
        settings.maxConcurrentStreams = max(1, limits.maximumConcurrentStreams)
        settings.initialWindowSize = 1 << 18
        settings.maxHeaderListSize = limits.maximumHeaderListSize
        self.http2 = HTTP2Connection(role: .server, local: settings)
        output.reserveCapacity(16 << 10)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let shortest = min(limits.handshakeTimeout, limits.idleTimeout, limits.requestTimeout, http2.limits.headerBlockTimeout)
        let interval = min(max(TimeAmount.nanoseconds(shortest.nanoseconds / 4), .milliseconds(10)), .seconds(1))
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
        streams = [:]
        bodyBytes = 0
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The server is shutting down gracefully: GOAWAY, answer what was started, then close.
        if event is ChannelShouldQuiesceEvent, !goingAway, !closing {
            goingAway = true
            // Every stream opened so far will be answered.
            http2.writeGoAway(code: .noError, into: &output)
            closeIfGoneAway(context)
            flush(context)
            return
        }
        // Hummingbird's server allows half-closure: a peer that stops sending is done.
        if case ChannelEvent.inputClosed = event, !closing {
            closing = true
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
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
            let count = data.readableBytes
            if stream.body.readableBytes + count > stream.limit {
                // Past the route's bound: answer now rather than read the rest.
                answerEarly(streamID, body: .tooLarge, context: context)
                return
            }
            if count > 0 {
                guard bodyBytes + count <= limits.maximumBufferedBodyBytes else {
                    // Over the connection's budget: not processed, the peer may send it again.
                    drop(streamID)
                    refuse(streamID)
                    return
                }
                streams[streamID] = nil  // no copy of the body while it grows
                bodyBytes += count
                if endStream, stream.body.readableBytes == 0 {
                    // The whole body in one frame, answered now: read where it lies, not copied.
                    stream.body = data
                } else {
                    var data = data
                    stream.body.writeBuffer(&data)
                }
                streams[streamID] = stream
            }
            if endStream { complete(streamID, context: context) }
        case .streamReset(let streamID, _, _):
            drop(streamID)
        case .settings, .settingsAcknowledged, .pingAck, .goAway:
            break
        }
    }

    private func receivedRequest(_ headers: HPACKHeaders, streamID: HTTP2StreamNumber, endStream: Bool, context: ChannelHandlerContext) {
        guard !goingAway else { return }
        counters.requests.add(1, ordering: .relaxed)
        // A peer that does not read its answers, or gives no window for them, gets no more: the
        // request is refused (it may send it again), so small requests cannot pile up answers.
        if !context.channel.isWritable || output.readableBytes + http2.pendingBodyBytes > limits.maximumQueuedResponseBytes {
            refuse(streamID)
            return
        }
        // HeraldHTTP2 has checked the request's pseudo-headers (RFC 9113 §8.3.1).
        let method = headers.first(name: ":method") ?? ""
        let path = Substring(headers.first(name: ":path") ?? "/").withoutQuery
        let limit = max(0, handler.maximumBodyCount(method: method, path: String(path)))
        streams[streamID] = PendingStream(method: method, path: path, headers: headers, limit: limit, openedAt: .now())
        if let declared = headers.first(name: "content-length").flatMap({ Int($0) }), declared > limit {
            answerEarly(streamID, body: .tooLarge, context: context)
            return
        }
        if endStream { complete(streamID, context: context) }
    }

    /// Answers a request whose body will not be read, then resets the stream with NO_ERROR: the
    /// peer must take the answer and stop sending (RFC 9113 §8.1).
    private func answerEarly(_ streamID: HTTP2StreamNumber, body: MockHTTPBody, context: ChannelHandlerContext) {
        complete(streamID, body: body, context: context)
        // An answer still waiting for window keeps its stream; what the peer sends on it is dropped.
        // A delayed answer keeps it too.
        if streams[streamID] == nil, !http2.hasPendingBody(streamID) { http2.resetStream(streamID, code: .noError, into: &output) }
    }

    /// The request on `streamID` arrived whole (or as much as will be read): ask the handler.
    private func complete(_ streamID: HTTP2StreamNumber, body: MockHTTPBody? = nil, context: ChannelHandlerContext) {
        guard var stream = streams[streamID], !stream.complete else { return }
        let request = MockHTTPRequest(
            method: stream.method, path: stream.path, headers: stream.headers, body: body ?? .bytes(stream.body), httpVersion: 2)
        let reply = handler.respond(to: request)
        if case .goAway = reply {
            drop(streamID)
            goAway(unprocessed: streamID, context: context)
            return
        }
        lastProcessedStreamID = max(lastProcessedStreamID, streamID)
        switch reply {
        case .now(let response):
            drop(streamID)
            write(response, on: streamID)
            closeIfGoneAway(context)
        case .goAway:
            break  // handled above
        case .after(let delay, let response):
            stream.complete = true
            streams[streamID] = stream
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .nanoseconds(Self.nanoseconds(delay))) {
                // Made whatever became of the stream, as the HTTP/1.1 path does: it may record.
                let answer = response()
                let this = handler.value
                guard let context = this.context, this.streams[streamID] != nil else { return }
                this.drop(streamID)
                this.write(answer, on: streamID)
                this.closeIfGoneAway(context)
                this.flush(context)
            }
        }
    }

    private func write(_ response: MockHTTPResponse, on streamID: HTTP2StreamNumber) {
        http2.writeHeaders(streamID: streamID, endStream: response.body.isEmpty, into: &output) { encoder, block in
            encoder.status(response.status, into: &block)
            for (name, value) in response.headers {
                if name == "content-type" {
                    encoder.indexing(name: name, value: value, staticNameIndex: HPACKBlockEncoder.Static.contentType, into: &block)
                } else {
                    encoder.literal(name: name, value: value, into: &block)
                }
            }
        }
        if !response.body.isEmpty { http2.writeBody(streamID: streamID, response.body, into: &output) }
    }

    /// Refuses a stream unprocessed: the peer may send it again.
    private func refuse(_ streamID: HTTP2StreamNumber) {
        counters.refusedStreams.add(1, ordering: .relaxed)
        http2.resetStream(streamID, code: .refusedStream, into: &output)
    }

    /// Forgets a stream's request, giving back its body bytes.
    private func drop(_ streamID: HTTP2StreamNumber) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        bodyBytes -= stream.body.readableBytes
        if streams.isEmpty { lastActivity = .now() }
    }

    // MARK: Closing

    /// A scripted GOAWAY (`NO_ERROR`) met by the request on `streamID`: the last stream processed
    /// is the last one handed to the routes, so this one and every later one are not processed
    /// (RFC 9113 §6.8) and the peer may send them again elsewhere. Streams below it that are
    /// still arriving or waiting for a delay are answered; then the connection closes.
    private func goAway(unprocessed streamID: HTTP2StreamNumber, context: ChannelHandlerContext) {
        guard !goingAway, !closing else {
            refuse(streamID)
            return
        }
        goingAway = true
        let last = lastProcessedStreamID
        http2.writeGoAway(lastStreamID: last, code: .noError, debugData: Array("maintenance".utf8), into: &output)
        // A later stream was answered first (its body came sooner): this one cannot be put above
        // the last, so it is refused instead, which says the same (§8.7).
        if streamID < last { refuse(streamID) }
        for id in streams.keys where id > last { drop(id) }
        closeIfGoneAway(context)
    }

    private func closeIfGoneAway(_ context: ChannelHandlerContext) {
        guard goingAway, !closing, streams.isEmpty, http2.pendingBodyBytes == 0 else { return }
        closing = true
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
        logger.debug("client broke HTTP/2", metadata: ["error": "\(error)"])
        http2.writeGoAway(for: error, into: &output)
        flush(context)
        context.close(promise: nil)
    }

    private func flush(_ context: ChannelHandlerContext) {
        guard output.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(output), promise: nil)
        output.clear(minimumCapacity: 16 << 10)
    }

    // MARK: Timer

    /// Deadlines: the handshake, idle connections, requests that never finish arriving, and
    /// header blocks left open.
    private func tick() {
        guard let context, !closing else { return }
        let now = NIODeadline.now()
        if !http2.isReady {
            if now - acceptedAt > limits.handshakeTimeout {
                logger.debug("client did not complete the HTTP/2 preface in time")
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
        for (id, stream) in streams where !stream.complete && now - stream.openedAt > limits.requestTimeout {
            drop(id)
            http2.resetStream(id, code: .cancel, into: &output)
        }
        if streams.isEmpty, http2.openStreamCount == 0, now - lastActivity > limits.idleTimeout {
            goingAway = true
            http2.writeGoAway(code: .noError, debugData: Array("idle".utf8), into: &output)
            closeIfGoneAway(context)
            return
        }
        flush(context)
    }

    /// `duration` in nanoseconds, clamped to what a `TimeAmount` holds.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole + attoseconds / 1_000_000_000
    }
}
