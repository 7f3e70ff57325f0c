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
/// feeds bytes to ``HTTP2Connection``, performs what ``ConnectionStateMachine`` decides, and
/// reports to the pool. Everything it writes during a read burst or a pull goes out in one write.
/// Lives on its channel's event loop.
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
        var connectTimeout: TimeAmount
    }


    let id: Int
    private let shared: Shared
    private var state: ConnectionStateMachine<RequestJob>
    private var http2: HTTP2Connection
    private var context: ChannelHandlerContext?
    private var output: ByteBuffer
    private var events: [HTTP2Connection.Event] = []
    private var timer: RepeatedTask?
    private var started = false
    private var ready = false
    private var closing = false
    private var failure: APNSClientError?
    private var pullPending = false
    /// Final outcomes of this burst, handed to the pool in one go.
    private var completed: [(job: RequestJob, result: RetryDecision.FinalResult)] = []
    private var logger: Logger
    private var authorization: (generation: Int, field: ByteBuffer)?
    private let openedAt = NIODeadline.now()

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
        self.state = ConnectionStateMachine(configuration: shared.stateConfiguration, now: .now())
        self.http2 = HTTP2Connection(role: .client, local: Self.localSettings)
        self.output = ByteBuffer()
        self.output.reserveCapacity(64 << 10)
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
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        // NIOSSL holds these bytes until the handshake completes.
        http2.start(into: &output)
        flush(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }  // TLS may still deliver bytes while it closes
        var bytes = unwrapInboundIn(data)
        let now = NIODeadline.now()
        state.read(now: now)
        do {
            try http2.receive(&bytes, now: now, outputWritable: context.channel.isWritable, events: &events, output: &output)
        } catch {
            fail(context, code: error.code, APNSClientError(.protocolError, "\(shared.authority) broke HTTP/2: \(error.message)"), http2Error: error)
            return
        }
        for event in events { handle(event, context: context, now: now) }
        events.removeAll(keepingCapacity: true)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        deliverCompleted()
        if pullPending {
            pullPending = false
            pull()
        }
        flush(context)
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiated) = event, negotiated != "h2" {
            // APNs is HTTP/2 only (ALPN h2, apns-spec §1.2).
            failure = APNSClientError(.tlsFailed, "\(shared.authority) did not agree to HTTP/2 (ALPN h2); it is not an APNs server")
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if failure == nil { failure = Self.classify(error, authority: shared.authority) }
        logger.debug("APNs connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        let outcomes = state.channelClosed()
        if ready {
            shared.metrics.connectionsClosed.increment()
            shared.pool.connectionClosed(id)
        } else {
            shared.pool.connectionFailed(id, error: failure ?? APNSClientError(.connectionFailed, "\(shared.authority) closed the connection during setup"))
        }
        for outcome in outcomes { handle(outcome) }
        deliverCompleted()
        context.fireChannelInactive()
    }

    // MARK: HTTP/2 events

    private func handle(_ event: HTTP2Connection.Event, context: ChannelHandlerContext, now: NIODeadline) {
        switch event {
        case .headers(let streamID, let headers, let endStream):
            var status: Int?
            var apnsID: String?
            var uniqueID: String?
            var channelID: String?
            var requestID: String?
            // :status is three digits (checked by HeraldHTTP2); the ids are the server's text,
            // made safe to print where they are read.
            for (name, value, _) in headers {
                switch name {
                case ":status": status = Int(value)
                case "apns-id": apnsID = Self.peerValue(value)
                case "apns-unique-id": uniqueID = Self.peerValue(value)
                case "apns-channel-id": channelID = Self.peerValue(value)
                case "apns-request-id": requestID = Self.peerValue(value)
                default: break
                }
            }
            if let outcome = state.headersReceived(
                streamID: streamID, status: status, apnsID: apnsID, uniqueID: uniqueID, endStream: endStream, now: now,
                channelID: channelID, requestID: requestID
            ) {
                finishedStream(streamID, outcome)
            }
        case .trailers(let streamID, _):
            if let outcome = state.dataReceived(streamID: streamID, bytes: ByteBuffer(), endStream: true, now: now) {
                finishedStream(streamID, outcome)
            }
        case .data(let streamID, let bytes, let endStream):
            if let outcome = state.dataReceived(streamID: streamID, bytes: bytes, endStream: endStream, now: now) {
                finishedStream(streamID, outcome)
            }
        case .streamReset(let streamID, let code, let byPeer):
            if let outcome = state.streamClosed(streamID: streamID, reason: code, byPeer: byPeer, now: now) {
                handle(outcome)
                pullPending = true
            }
            closeIfDrained()
        case .settings(let first, let maxConcurrentStreams):
            // The stream budget follows SETTINGS_MAX_CONCURRENT_STREAMS live (apns-spec §1.3).
            let grew = state.settingsReceived(maximumConcurrentStreams: maxConcurrentStreams == .max ? nil : maxConcurrentStreams)
            logger.trace("server settings", metadata: ["max_concurrent_streams": "\(maxConcurrentStreams)"])
            if first, state.phase == .active {
                ready = true
                shared.metrics.connectionsOpened.increment()
                shared.pool.connectionReady(ConnectionHandle(id: id, channel: context.channel, handler: self))
                pullPending = true
            } else if grew {
                pullPending = true
            }
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
            let outcomes = state.goAwayReceived(lastStreamID: lastStreamID)
            shared.pool.connectionDraining(id)
            for outcome in outcomes { handle(outcome) }
            closeIfDrained()
        }
    }

    private func finishedStream(_ streamID: HTTP2StreamNumber, _ outcome: ConnectionStateMachine<RequestJob>.StreamOutcome) {
        // A body still being sent was stopped by the connection (RFC 9113 §8.1).
        handle(outcome)
        pullPending = true
        closeIfDrained()
    }

    // MARK: Sending

    /// Opens streams for queued notifications while the stream budget allows, in one write.
    func pull() {
        guard let context else { return }
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
        if state.phase == .draining { shared.pool.connectionDraining(id) }
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
                RequestEncoder.writeFields(for: notification, authority: authority, authorization: authorization, encoder: &encoder, into: &block)
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
            if job.succeeds(with: response.status) {
                let final = RetryDecision.FinalResult.succeeded(
                    RawResponse(
                        status: response.status, apnsID: response.apnsID, uniqueID: response.uniqueID, channelID: response.channelID,
                        requestID: response.requestID, body: response.body
                    )
                )
                record(final, job: job)
                completed.append((job, final))
                return
            }
            result = .rejected(APNSError(status: response.status, responseBody: response.body, apnsID: response.apnsID))
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
            if avoidConnection, state.isAccepting {
                state.drain()
                shared.pool.connectionDraining(id)
            }
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

    // MARK: Timer and closing

    private func tick() {
        guard let context else { return }
        if !ready, NIODeadline.now() - openedAt >= shared.connectTimeout {
            failure = APNSClientError(.connectionFailed, "\(shared.authority) did not complete TLS and HTTP/2 setup within \(shared.connectTimeout)")
            context.close(promise: nil)
            return
        }
        let now = NIODeadline.now()
        do {
            try http2.checkTimeouts(now: now)
        } catch {
            fail(context, code: error.code, APNSClientError(.protocolError, "\(shared.authority) broke HTTP/2: \(error.message)"), http2Error: error)
            return
        }
        let actions = state.tick(now: now)
        if let ping = actions.ping { output.writeHTTP2Ping(ping, ack: false) }
        for streamID in actions.cancelStreams {
            http2.resetStream(streamID, code: .cancel, into: &output)
        }
        for outcome in actions.outcomes { handle(outcome) }
        deliverCompleted()
        if let dead = actions.deadReason {
            logger.warning("APNs connection is dead; closing it and re-sending its notifications", metadata: ["reason": "\(dead)"])
        }
        if state.phase == .draining { shared.pool.connectionDraining(id) }
        if actions.closeConnection {
            close(context)
        } else {
            pull()
            flush(context)
        }
    }

    /// Stops taking work and closes once the open streams end.
    func drainAndClose() {
        state.drain()
        shared.pool.connectionDraining(id)
        closeIfDrained()
    }

    private func closeIfDrained() {
        if state.isDrained, let context { close(context) }
    }

    /// Says goodbye with GOAWAY, then closes.
    private func close(_ context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        http2.writeGoAway(code: .noError, into: &output)
        flush(context)
        context.close(promise: nil)
    }

    private func fail(_ context: ChannelHandlerContext, code: HTTP2ErrorCode, _ error: APNSClientError, http2Error: HTTP2ConnectionError? = nil) {
        failure = failure ?? error
        logger.warning("closing APNs connection", metadata: ["error": "\(error)"])
        guard !closing else { return }
        closing = true
        if let http2Error {
            http2.writeGoAway(for: http2Error, into: &output)
        } else {
            http2.writeGoAway(code: code, into: &output)
        }
        flush(context)
        context.close(promise: nil)
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
