import HeraldCore
import HeraldHTTP2
import Logging
import NIOCore
import NIOSSL
import NIOTLS

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Runs one APNs connection: the HTTP/2 frames of many notifications over one TLS channel. It
/// feeds bytes to ``HTTP2Connection``, hands every event to ``ConnectionStateMachine`` and
/// performs the actions it returns: writes, reports to the pool, outcomes through the retry
/// rules. It decides nothing itself. Everything it writes during a read burst or a pull goes out
/// in one write. Lives on its channel's event loop.
final class ConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// What every connection of a client shares.
    struct Shared: Sendable {
        var pool: ConnectionPool
        var authority: String
        var issuer: ProviderTokenIssuer?
        var decider: RetryDecider
        var metrics: ClientMetrics
        var stateConfiguration: ConnectionStateMachine<RequestJob>.Configuration
        var tickInterval: TimeAmount
    }


    typealias Machine = ConnectionStateMachine<RequestJob>

    let id: Int
    private let shared: Shared
    private var state: Machine
    private var http2: HTTP2Connection
    private var context: ChannelHandlerContext?
    private var output: ByteBuffer
    private var fieldsMemo = RequestEncoder.FieldsMemo()
    private var events: [HTTP2Connection.Event] = []
    /// Actions the state machine returned, performed in order; reused, so the hot path does not allocate.
    private var actions: [Machine.Action] = []
    private var performing = false
    private var timer: RepeatedTask?
    /// Final outcomes of this burst, handed to the pool in one go.
    private var completed: [(job: RequestJob, result: RetryDecision.FinalResult)] = []
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
        logger.debug("APNs connection error", metadata: ["error": "\(error)"])
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
            var apnsID: String?
            var uniqueID: String?
            var channelID: String?
            var requestID: String?
            var location: String?
            var retryAfter: String?
            // :status is three digits (checked by HeraldHTTP2); the ids are the server's text,
            // made safe to print where they are read.
            for (name, value, _) in headers {
                switch name {
                case ":status": status = Int(value)
                case "apns-id": apnsID = Self.peerValue(value)
                case "apns-unique-id": uniqueID = Self.peerValue(value)
                case "apns-channel-id": channelID = Self.peerValue(value)
                case "apns-request-id": requestID = Self.peerValue(value)
                case "location": location = Self.peerValue(value)
                case "retry-after": retryAfter = Self.peerValue(value)
                default: break
                }
            }
            state.headersReceived(
                streamID: streamID, status: status, apnsID: apnsID, uniqueID: uniqueID, endStream: endStream, now: now,
                channelID: channelID, requestID: requestID, location: location, retryAfter: retryAfter, into: &actions
            )
        case .trailers(let streamID, _):
            state.dataReceived(streamID: streamID, bytes: ByteBuffer(), endStream: true, now: now, into: &actions)
        case .data(let streamID, let bytes, let endStream):
            state.dataReceived(streamID: streamID, bytes: bytes, endStream: endStream, now: now, into: &actions)
        case .streamReset(let streamID, let code, let byPeer):
            state.streamClosed(streamID: streamID, reason: code, byPeer: byPeer, now: now, into: &actions)
        case .settings(_, let maxConcurrentStreams):
            // The stream budget follows SETTINGS_MAX_CONCURRENT_STREAMS live (apns-spec §1.3).
            logger.trace("server settings", metadata: ["max_concurrent_streams": "\(maxConcurrentStreams)"])
            state.settingsReceived(maximumConcurrentStreams: maxConcurrentStreams == .max ? nil : maxConcurrentStreams, into: &actions)
        case .pingAck(let data):
            state.pingAckReceived(data)
        case .settingsAcknowledged:
            break
        case .goAway(let lastStreamID, let code, let debugData):
            // APNs says why in JSON, e.g. {"reason":"Shutdown"} (apns-spec §1.3); whatever it is,
            // it reaches the log escaped and cut short.
            logger.notice(
                "APNs sent GOAWAY",
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
                logger.warning("APNs connection is dead; closing it and re-sending its notifications", metadata: ["reason": "\(dead)"])
            }
            guard let context else { return }
            http2.writeGoAway(code: .noError, into: &output)
            flush(context)
            context.close(promise: nil)
        case .closeForProtocolError(let error):
            logger.warning("closing APNs connection", metadata: ["error": "\(state.failure.map { "\($0)" } ?? error.message)"])
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

    /// Opens streams for queued notifications while the stream budget allows, in one write.
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
        var token: ProviderToken?
        if let issuer = shared.issuer {
            do {
                token = try issuer.currentToken()
            } catch {
                let failure = APNSClientError(.invalidCredentials, "provider token could not be signed: \(error)")
                for job in jobs { shared.pool.finished(job, .failed(failure)) }
                return
            }
        }
        let field = token.map(authorizationField)
        let now = NIODeadline.now()
        for job in jobs {
            job.providerToken = token
            write(job, authorization: field, now: now)
        }
        state.streamsOpened(into: &actions)
        perform()
        flush(context)
    }

    private func authorizationField(_ token: ProviderToken) -> ByteBuffer {
        if let cached = authorization, cached.generation == token.generation { return cached.field }
        let field = RequestEncoder.authorizationField(token)
        authorization = (token.generation, field)
        return field
    }

    private func write(_ job: RequestJob, authorization: ByteBuffer?, now: NIODeadline) {
        job.attempts += 1
        shared.metrics.sent.increment()
        let streamID = state.openStream(for: job, now: now, deadline: job.deadline)
        let authority = shared.authority
        switch job.request {
        case .other(let other, _):
            http2.writeHeaders(streamID: streamID, endStream: other.body == nil, into: &output) { encoder, block in
                RequestEncoder.writeFields(for: other, authority: authority, authorization: authorization, encoder: &encoder, into: &block)
            }
            if let body = other.body { http2.writeBody(streamID: streamID, body, into: &output) }
        case .notification(let notification, _, _):
            http2.writeHeaders(streamID: streamID, endStream: false, into: &output) { encoder, block in
                RequestEncoder.writeFields(
                    for: notification, authority: authority, authorization: authorization, memo: &fieldsMemo, encoder: &encoder, into: &block)
            }
            http2.writeBody(streamID: streamID, notification.payload.bytes, into: &output)
        }
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

    private func handle(_ outcome: ConnectionStateMachine<RequestJob>.StreamOutcome) {
        let job: RequestJob
        let result: AttemptResult
        switch outcome {
        case .response(let answered, let response):
            job = answered
            shared.metrics.latency.recordNanoseconds(response.latency.nanoseconds)
            if job.succeeds(with: response.answer.status) {
                let final = RetryDecision.FinalResult.succeeded(response.answer)
                record(final, job: job)
                completed.append((job, final))
                return
            }
            result = .rejected(APNSError(status: response.answer.status, responseBody: response.answer.body, apnsID: response.answer.apnsID))
        case .unprocessed(let refused):
            job = refused
            result = .unprocessed
        case .lost(let lostJob, let why):
            job = lostJob
            result = .lost(why)
        case .timedOut(let late):
            job = late
            result = .timedOut
        }

        let decision = shared.decider.decide(
            result, attempts: job.attempts, expiredTokenRetries: job.expiredTokenRetries,
            unprocessedResends: job.unprocessedResends, expiration: job.expiration, now: Date(), random: Double.random(in: 0..<1)
        )
        switch decision {
        case .final(let final):
            record(final, job: job)
            completed.append((job, final))
        case .retry(let delay, let renewToken, let avoidConnection):
            shared.metrics.retried.increment()
            if case .unprocessed = result {
                job.unprocessedResends += 1
                job.attempts -= 1  // never reached the server
            }
            if renewToken, let issuer = shared.issuer, let rejected = job.providerToken {
                job.expiredTokenRetries += 1
                _ = try? issuer.renew(afterRejectionOf: rejected)
            }
            if avoidConnection { state.drain(into: &actions) }
            job.logger.debug(
                "APNs notification will be retried",
                metadata: ["attempt": "\(job.attempts)", "delay": "\(delay)", "result": "\(Self.describe(result))"]
            )
            shared.pool.retry(job, after: .nanoseconds(Int64(delay.seconds * 1e9)))
        }
    }

    private func record(_ final: RetryDecision.FinalResult, job: RequestJob) {
        switch final {
        case .succeeded(let response):
            shared.metrics.accepted.increment()
            job.logger.trace(
                "APNs accepted the request",
                metadata: ["status": "\(response.status)", "apns-id": "\(response.apnsID ?? response.requestID ?? "")"]
            )
        case .rejected(let error):
            shared.metrics.rejected(error.reason)
            job.logger.debug(
                "APNs rejected the notification",
                metadata: ["apns-id": "\(error.apnsID ?? "")", "reason": "\(error.reason)", "status": "\(error.status ?? 0)"]
            )
        case .failed(let error):
            shared.metrics.failed.increment()
            job.logger.debug("APNs notification could not be delivered", metadata: ["error": "\(error)"])
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

    private static func classify(_ error: any Error, authority: String) -> APNSClientError {
        if error is NIOSSLError || error is BoringSSLError {
            return APNSClientError(.tlsFailed, "TLS with \(authority) failed: \(error)")
        }
        return APNSClientError(.connectionLost, "connection to \(authority) failed: \(error)")
    }

    private static func describe(_ result: AttemptResult) -> String {
        switch result {
        case .rejected(let error): error.reason.rawValue
        case .unprocessed: "not processed by the server"
        case .lost(let why): why
        case .timedOut: "timed out"
        }
    }
}
