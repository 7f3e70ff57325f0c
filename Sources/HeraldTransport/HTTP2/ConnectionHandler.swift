import HeraldCore
import HeraldHTTP2
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// Runs one HTTP/2 connection to a push service: the frames of many requests over one TLS
/// channel. It feeds bytes to ``HTTP2Connection``, hands every event to ``ConnectionStateMachine``
/// and performs the actions it returns: writes, reports to the pool, ended attempts to the
/// platform's ``HTTP2Rules``. It decides nothing itself. Everything it writes during a read burst
/// or a pull goes out in one write. Lives on its channel's event loop.
final class ConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// What every connection of a client shares.
    struct Shared: Sendable {
        var pool: ConnectionPool
        var authority: String
        /// The server's kind, for log messages ("APNs", "FCM", "push service").
        var name: String
        var rules: any HTTP2Rules
        var metrics: TransportMetrics
        var stateConfiguration: Machine.Configuration
        var tickInterval: TimeAmount
    }

    typealias Machine = ConnectionStateMachine<any HTTP2Job>

    let id: Int
    private let shared: Shared
    private var state: Machine
    private var http2: HTTP2Connection
    private var context: ChannelHandlerContext?
    private var output: ByteBuffer
    /// The platform's state for its requests on this connection (``HTTP2Rules/makeConnectionState()``).
    private let platformState: AnyObject?
    private var events: [HTTP2Connection.Event] = []
    /// Actions the state machine returned, performed in order; reused, so the hot path does not allocate.
    private var actions: [Machine.Action] = []
    private var performing = false
    private var timer: RepeatedTask?
    /// Final outcomes of this burst, handed to the pool in one go.
    private var completed: [any HTTP2Job] = []
    private var logger: Logger
    private var authorization: (generation: Int, field: ByteBuffer)?

    /// What this client advertises: no push, a large window for answers.
    static let localSettings: HTTP2Connection.Settings = {
        var settings = HTTP2Connection.Settings()
        settings.enablePush = 0
        settings.maxConcurrentStreams = 0
        settings.initialWindowSize = 1 << 20
        settings.maxHeaderListSize = 16 << 10
        return settings
    }()

    init(id: Int, shared: Shared) {
        self.id = id
        self.shared = shared
        self.state = Machine(configuration: shared.stateConfiguration, now: .now())
        self.http2 = HTTP2Connection(role: .client, local: Self.localSettings)
        self.output = ByteBuffer()
        self.output.reserveCapacity(64 << 10)
        self.actions.reserveCapacity(64)
        self.platformState = shared.rules.makeConnectionState()
        var logger = shared.pool.logger
        logger[metadataKey: "connection"] = "\(id)"
        self.logger = logger
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // The timer is cancelled when the channel closes, which ends the reference cycle.
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let interval = shared.tickInterval
        timer = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            handler.value.tick()
        }
        if context.channel.isActive {
            state.channelActive(into: &actions)
            perform()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        state.channelActive(into: &actions)
        perform()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !state.isClosing else { return }  // TLS may still deliver bytes while it closes
        var bytes = unwrapInboundIn(data)
        let now = NIODeadline.now()
        state.read(now: now)
        do {
            try http2.receive(&bytes, now: now, outputWritable: context.channel.isWritable, events: &events, output: &output)
        } catch {
            events.removeAll(keepingCapacity: true)
            state.protocolError(error, into: &actions)
            perform()
            return
        }
        for event in events { handle(event, context: context, now: now) }
        events.removeAll(keepingCapacity: true)
        perform()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        state.readComplete(into: &actions)
        perform()
        deliverCompleted()
        flush(context)
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiated) = event {
            state.handshakeCompleted(alpn: negotiated, into: &actions)
            perform()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("\(shared.name) connection error", metadata: ["error": "\(error)"])
        state.errorCaught(Self.classify(error, authority: shared.authority), into: &actions)
        perform()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        state.channelClosed(into: &actions)
        perform()
        deliverCompleted()
        context.fireChannelInactive()
    }

    // MARK: HTTP/2 events

    /// Reads what matters of an HTTP/2 event and hands it to the state machine.
    private func handle(_ event: HTTP2Connection.Event, context: ChannelHandlerContext, now: NIODeadline) {
        switch event {
        case .headers(let streamID, let headers, let endStream):
            var status: Int?
            var fields: [HTTP2Field] = []
            // :status is three digits (checked by HeraldHTTP2); the other fields are the server's
            // text, made safe to print where they are read, and bounded in number.
            for (name, value, _) in headers {
                if name == ":status" {
                    status = Int(value)
                } else if name.utf8.first != UInt8(ascii: ":"), fields.count < HTTP2Answer.maximumFields {
                    fields.append(HTTP2Field(name: name, value: Self.peerValue(value)))
                }
            }
            state.headersReceived(streamID: streamID, status: status, fields: fields, endStream: endStream, now: now, into: &actions)
        case .trailers(let streamID, _):
            state.dataReceived(streamID: streamID, bytes: ByteBuffer(), endStream: true, now: now, into: &actions)
        case .data(let streamID, let bytes, let endStream):
            state.dataReceived(streamID: streamID, bytes: bytes, endStream: endStream, now: now, into: &actions)
        case .streamReset(let streamID, let code, let byPeer):
            state.streamClosed(streamID: streamID, reason: code, byPeer: byPeer, now: now, into: &actions)
        case .settings(_, let maxConcurrentStreams):
            // The stream budget follows SETTINGS_MAX_CONCURRENT_STREAMS live (RFC 9113 §6.5.2).
            logger.trace("server settings", metadata: ["max_concurrent_streams": "\(maxConcurrentStreams)"])
            state.settingsReceived(maximumConcurrentStreams: maxConcurrentStreams == .max ? nil : maxConcurrentStreams, into: &actions)
        case .pingAck(let data):
            state.pingAckReceived(data)
        case .settingsAcknowledged:
            break
        case .goAway(let lastStreamID, let code, let debugData):
            // The server may say why (APNs in JSON, e.g. {"reason":"Shutdown"}); whatever it is,
            // it reaches the log escaped and cut short.
            logger.notice(
                "\(shared.name) sent GOAWAY",
                metadata: ["last_stream_id": "\(lastStreamID)", "error_code": "\(code)", "reason": "\(PeerText(debugData.readableBytesView))"]
            )
            state.goAwayReceived(lastStreamID: lastStreamID, into: &actions)
        }
    }

    // MARK: Performing actions

    /// Performs the actions queued so far, in order, including those their performing adds.
    private func perform() {
        guard !performing else { return }  // the outer call reaches the ones added meanwhile
        performing = true
        var index = 0
        while index < actions.count {
            let action = actions[index]
            index += 1
            perform(action)
        }
        actions.removeAll(keepingCapacity: true)
        performing = false
    }

    private func perform(_ action: Machine.Action) {
        switch action {
        case .startProtocol:
            // NIOSSL holds these bytes until the handshake completes.
            http2.start(into: &output)
            if let context { flush(context) }
        case .reportReady:
            shared.metrics.connectionsOpened.increment()
            if let context { shared.pool.connectionReady(ConnectionHandle(id: id, channel: context.channel, handler: self)) }
        case .reportDraining:
            shared.pool.connectionDraining(id)
        case .pull:
            pull()
        case .sendPing(let data):
            output.writeHTTP2Ping(data, ack: false)
        case .cancelStream(let streamID):
            http2.resetStream(streamID, code: .cancel, into: &output)
        case .streamEnded(let outcome):
            handle(outcome)
        case .closeGracefully(let dead):
            if let dead {
                logger.warning("\(shared.name) connection is dead; closing it and re-sending its requests", metadata: ["reason": "\(dead)"])
            }
            guard let context else { return }
            http2.writeGoAway(code: .noError, into: &output)
            flush(context)
            context.close(promise: nil)
        case .closeForProtocolError(let error):
            logger.warning("closing \(shared.name) connection", metadata: ["error": "\(state.failure.map { "\($0)" } ?? error.message)"])
            guard let context else { return }
            http2.writeGoAway(for: error, into: &output)
            flush(context)
            context.close(promise: nil)
        case .closeChannel:
            context?.close(promise: nil)
        case .reportClosed:
            shared.metrics.connectionsClosed.increment()
            shared.pool.connectionClosed(id)
        case .reportFailed(let error):
            shared.pool.connectionFailed(id, error: error)
        }
    }

    // MARK: Sending

    /// Opens streams for queued requests while the stream budget allows, in one write.
    func pull() {
        guard let context, !state.isClosing else { return }
        let available = state.availableStreams
        guard available > 0 else {
            // A connection that can open no stream at all (the server allows none): tell the
            // pool, so it does not count on this connection and may open another.
            if state.openStreams == 0, state.phase == .active { _ = shared.pool.dequeue(for: id, maximum: 0) }
            return
        }
        let jobs = shared.pool.dequeue(for: id, maximum: available)
        guard !jobs.isEmpty else { return }
        let authorization: HTTP2Authorization?
        do {
            authorization = try shared.rules.currentAuthorization()
        } catch {
            for job in jobs { shared.pool.fail(job, error) }
            return
        }
        let writing = HTTP2WriteContext(authority: shared.authority, authorization: authorization.map(authorizationField), state: platformState)
        let now = NIODeadline.now()
        for job in jobs {
            job.authorization = authorization
            job.attempts += 1
            shared.metrics.sent.increment()
            let streamID = state.openStream(for: job, now: now, deadline: job.deadline)
            job.write(streamID: streamID, on: &http2, context: writing, into: &output)
        }
        state.streamsOpened(into: &actions)
        perform()
        flush(context)
    }

    /// The encoded `authorization` field, made once per credential generation and copied into
    /// each request: a literal without indexing (RFC 7541 §6.2.2), as APNs asks of its provider
    /// tokens (Apple, "Sending notification requests to APNs").
    private func authorizationField(_ authorization: HTTP2Authorization) -> ByteBuffer {
        if let cached = self.authorization, cached.generation == authorization.generation { return cached.field }
        var field = ByteBuffer()
        HPACKBlockEncoder().literal(staticNameIndex: HPACKBlockEncoder.Static.authorization, value: authorization.value, into: &field)
        self.authorization = (authorization.generation, field)
        return field
    }

    private func flush(_ context: ChannelHandlerContext) {
        guard output.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(output), promise: nil)
        output.clear(minimumCapacity: 16 << 10)
    }

    // MARK: Outcomes

    private func deliverCompleted() {
        guard !completed.isEmpty else { return }
        shared.pool.finished(completed)
        completed.removeAll(keepingCapacity: true)
    }

    private func handle(_ outcome: Machine.StreamOutcome) {
        let job: any HTTP2Job
        let attempt: HTTP2Attempt
        switch outcome {
        case .response(let answered, let answer):
            job = answered
            shared.metrics.latency.recordNanoseconds(answer.latency.nanoseconds)
            attempt = .answered(answer)
        case .unprocessed(let refused):
            job = refused
            attempt = .unprocessed
        case .lost(let lostJob, let why):
            job = lostJob
            attempt = .lost(why)
        case .timedOut(let late):
            job = late
            attempt = .timedOut
        }
        switch shared.rules.judge(attempt, of: job) {
        case .done:
            completed.append(job)
        case .retry(let delay, let avoidConnection):
            shared.metrics.retried.increment()
            if avoidConnection { state.drain(into: &actions) }
            shared.pool.retry(job, after: delay)
        }
    }

    // MARK: Timer

    private func tick() {
        guard let context else { return }
        let now = NIODeadline.now()
        do {
            try http2.checkTimeouts(now: now)
        } catch {
            state.protocolError(error, into: &actions)
            perform()
            return
        }
        state.tick(now: now, into: &actions)
        perform()
        deliverCompleted()
        flush(context)
    }

    /// Stops taking work and closes once the open streams end.
    func drainAndClose() {
        state.drain(into: &actions)
        perform()
    }

    /// A header value from the server as it may be printed: as it is when it is short and holds
    /// nothing a terminal would act on (the usual UUID), else escaped and cut short.
    static func peerValue(_ value: String) -> String {
        value.utf8.count <= 128 && PeerText.isSafe(value) ? value : PeerText(value, limit: 128).description
    }

    private static func classify(_ error: any Error, authority: String) -> TransportError {
        if TLSTrust.isUntrusted(error) {
            return TransportError(.untrusted, TLSTrust.untrustedMessage(authority: authority))
        }
        if error is NIOSSLError || error is BoringSSLError {
            return TransportError(.tlsFailed, "TLS with \(authority) failed: \(error)")
        }
        return TransportError(.connectionLost, "connection to \(authority) failed: \(error)")
    }
}
