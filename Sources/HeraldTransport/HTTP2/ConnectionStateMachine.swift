import HeraldHTTP2
import NIOCore

/// The life of one HTTP/2 connection to a push service, as a plain value: setup (the preface, ALPN, the
/// server's first SETTINGS, the setup deadline), which streams are open, how many more may open
/// (SETTINGS_MAX_CONCURRENT_STREAMS, followed live), GOAWAY draining, PING liveness, per-request
/// deadlines, and how it closes. Each event appends ``Action``s to the caller's buffer (no
/// allocation on the hot path); ``ConnectionHandler`` performs them and does nothing it was not
/// told. Generic over the job so it is tested with plain values.
struct ConnectionStateMachine<Job> {
    struct Configuration {
        /// The server, for messages.
        var authority: String
        /// How long TLS and HTTP/2 setup may take, until the server's first SETTINGS.
        var connectTimeout: TimeAmount
        /// Streams this side allows itself at most, whatever the server allows.
        var maximumStreams: Int
        /// How long a request may wait for its answer.
        var requestTimeout: TimeAmount
        /// PING after this long without reading anything (NAT gateways drop idle flows at 350 s).
        var idlePingInterval: TimeAmount
        /// PING when an answer is this late, to tell a slow server from a dead connection.
        var responseOverdueAfter: TimeAmount
        /// A PING unanswered for this long means the connection is dead.
        var pingTimeout: TimeAmount
        /// Streams opened before the connection is rolled (client stream IDs end at 2^31-1).
        var maximumStreamsPerConnection: Int
        /// Age after which the connection is rolled; `nil` keeps it as long as it works.
        var maximumAge: TimeAmount?
    }

    enum Phase: Equatable {
        /// Connected, waiting for the server's first SETTINGS before opening streams.
        case waitingForSettings
        case active
        /// No new streams (GOAWAY received, or rolled); closes when the last stream ends.
        case draining
        case closed
    }

    /// How a stream ended.
    enum StreamOutcome {
        /// The server answered (a complete response, even if the stream was then reset).
        case response(Job, HTTP2Answer)
        /// The server did not process the request (REFUSED_STREAM, above a GOAWAY's last stream
        /// ID): safe to send again, elsewhere.
        case unprocessed(Job)
        /// The connection or stream failed before an answer: the request may or may not have been delivered.
        case lost(Job, String)
        /// No answer before the request deadline.
        case timedOut(Job)
    }

    /// What the connection's driver does next.
    enum Action {
        /// Write the HTTP/2 preface and SETTINGS (once; TLS holds them until its handshake is done).
        case startProtocol
        /// The server's first SETTINGS arrived: tell the pool the connection is ready.
        case reportReady
        /// Tell the pool the connection takes no more work (once).
        case reportDraining
        /// Streams are free: ask the pool for work.
        case pull
        /// Send a PING with this payload.
        case sendPing(UInt64)
        /// Reset this stream with CANCEL: its deadline passed.
        case cancelStream(HTTP2StreamNumber)
        /// A stream ended: apply the retry rules to its job.
        case streamEnded(StreamOutcome)
        /// Say goodbye with GOAWAY(NO_ERROR), then close. `dead` says why, when no PING answer came.
        case closeGracefully(dead: String?)
        /// The server broke HTTP/2: GOAWAY with the error, then close.
        case closeForProtocolError(HTTP2ConnectionError)
        /// Close the channel now, without GOAWAY (setup failed or timed out, or the channel erred).
        case closeChannel
        /// The channel closed: tell the pool it closed (it had been ready) or failed during setup.
        case reportClosed
        case reportFailed(TransportError)
    }

    private struct Stream {
        var job: Job
        var sentAt: NIODeadline
        /// When the attempt times out: the request timeout counted from when it was queued.
        var deadline: NIODeadline
        var status: Int?
        var fields: [HTTP2Field] = []
        var body: [UInt8] = []
    }

    let configuration: Configuration
    private(set) var phase: Phase = .waitingForSettings
    private var streams = StreamTable<Stream>(firstStreamID: 1)
    private var remoteMaximumStreams: Int = 0
    private var nextStreamID: HTTP2StreamNumber = 1
    private(set) var streamsOpened = 0
    private var lastReadAt: NIODeadline
    private let openedAt: NIODeadline
    private var outstandingPing: (data: UInt64, sentAt: NIODeadline)?
    private var pingCounter: UInt64 = 0
    private(set) var goAwayLastStreamID: HTTP2StreamNumber?
    /// The preface was written.
    private var started = false
    /// The pool was told the connection is ready.
    private(set) var isReady = false
    /// Closing began: nothing more is read or written but the goodbye.
    private(set) var isClosing = false
    /// Why the connection failed, for the pool: the first reason wins.
    private(set) var failure: TransportError?
    /// A stream ended or the budget grew during this read: pull when the read is complete.
    private var pullPending = false
    private var reportedDraining = false

    init(configuration: Configuration, now: NIODeadline) {
        self.configuration = configuration
        self.lastReadAt = now
        self.openedAt = now
    }

    /// Streams open now.
    var openStreams: Int { streams.count }

    /// The job on an open stream.
    func job(on streamID: HTTP2StreamNumber) -> Job? { streams[streamID]?.job }

    /// How many more streams may open now.
    var availableStreams: Int {
        guard phase == .active else { return 0 }
        let limit = min(remoteMaximumStreams, configuration.maximumStreams)
        let lifetimeLeft = configuration.maximumStreamsPerConnection - streamsOpened
        return max(0, min(limit - streams.count, lifetimeLeft))
    }

    /// Whether the connection takes new work.
    var isAccepting: Bool { phase == .waitingForSettings || phase == .active }

    // MARK: Setup

    /// The channel is active: start the protocol (once).
    mutating func channelActive(into actions: inout [Action]) {
        guard !started else { return }
        started = true
        actions.append(.startProtocol)
    }

    /// TLS is done. This connection speaks HTTP/2 only, agreed by ALPN `h2` (RFC 9113 §3.2); a
    /// server that did not agree fails it with ``TransportError/Code/http2NotOffered``.
    mutating func handshakeCompleted(alpn: String?, into actions: inout [Action]) {
        guard alpn != "h2" else { return }
        fail(TransportError(.http2NotOffered, "\(configuration.authority) did not agree to HTTP/2 (ALPN h2)"), into: &actions)
    }

    /// The channel reported an error (TLS, I/O): it closes.
    mutating func errorCaught(_ error: TransportError, into actions: inout [Action]) {
        fail(error, into: &actions)
    }

    /// The bytes read broke HTTP/2: GOAWAY with the error, and close.
    mutating func protocolError(_ error: HTTP2ConnectionError, into actions: inout [Action]) {
        if failure == nil { failure = TransportError(.protocolError, "\(configuration.authority) broke HTTP/2: \(error.message)") }
        guard !isClosing else { return }
        isClosing = true
        actions.append(.closeForProtocolError(error))
    }

    // MARK: Reading

    /// Something was read: the connection is alive.
    mutating func read(now: NIODeadline) {
        lastReadAt = now
    }

    /// The read burst is over: pull if a stream ended or the budget grew meanwhile.
    mutating func readComplete(into actions: inout [Action]) {
        guard pullPending else { return }
        pullPending = false
        actions.append(.pull)
    }

    /// The server's SETTINGS: follow its stream limit (it can drop to 1 and rise again, §1.3).
    /// The first one makes the connection ready.
    mutating func settingsReceived(maximumConcurrentStreams: Int?, into actions: inout [Action]) {
        let before = availableStreams
        let wasWaiting = phase == .waitingForSettings
        if let maximumConcurrentStreams {
            remoteMaximumStreams = maximumConcurrentStreams
        } else if phase == .waitingForSettings {
            // Absent means unlimited (RFC 9113 §6.5.2); our own maximum applies.
            remoteMaximumStreams = .max
        }
        if phase == .waitingForSettings { phase = .active }
        if wasWaiting, phase == .active, !isReady, !isClosing {
            isReady = true
            actions.append(.reportReady)
            pullPending = true
        } else if availableStreams > before {
            pullPending = true
        }
    }

    /// Opens a stream for `job`. Call only while ``availableStreams`` > 0; call
    /// ``streamsOpened(into:)`` after a batch.
    ///
    /// - Parameter deadline: when the attempt times out; by default the request timeout from now.
    ///   The client counts it from when the request was queued, so waiting for a stream counts.
    mutating func openStream(for job: Job, now: NIODeadline, deadline: NIODeadline? = nil) -> HTTP2StreamNumber {
        precondition(availableStreams > 0, "no stream budget")
        let id = nextStreamID
        nextStreamID += 2
        streams.append(id, Stream(job: job, sentAt: now, deadline: deadline ?? now + configuration.requestTimeout))
        streamsOpened += 1
        if streamsOpened >= configuration.maximumStreamsPerConnection { phase = .draining }
        return id
    }

    /// After a batch of ``openStream(for:now:deadline:)``: report draining when the stream-ID
    /// lifetime ran out.
    mutating func streamsOpened(into actions: inout [Action]) {
        transitions(into: &actions)
    }

    /// Response headers. A complete answer (END_STREAM) ends the stream at once.
    mutating func headersReceived(
        streamID: HTTP2StreamNumber, status: Int?, fields: [HTTP2Field] = [], endStream: Bool, now: NIODeadline, into actions: inout [Action]
    ) {
        let open: Void? = streams.update(streamID) { stream in
            guard let status, stream.status == nil else { return }
            stream.status = status
            stream.fields = fields
        }
        if open != nil, endStream { finish(streamID, now: now, into: &actions) }
    }

    /// Response body bytes (the JSON error of a rejection).
    mutating func dataReceived(streamID: HTTP2StreamNumber, bytes: ByteBuffer, endStream: Bool, now: NIODeadline, into actions: inout [Action]) {
        let open: Void? = streams.update(streamID) { stream in
            // An error body is tiny; cap what is kept so a misbehaving server cannot grow memory.
            let room = HTTP2Answer.maximumBody - stream.body.count
            if room > 0 { stream.body.append(contentsOf: bytes.readableBytesView.prefix(room)) }
        }
        if open != nil, endStream { finish(streamID, now: now, into: &actions) }
    }

    /// The stream closed (normally, by RST_STREAM, or by GOAWAY). An answer already received
    /// counts, even if the server then reset the stream with NO_ERROR before reading the whole
    /// request, as HTTP/2 allows.
    /// - Parameter byPeer: false when this side reset the stream because the server broke a rule on it.
    mutating func streamClosed(
        streamID: HTTP2StreamNumber, reason: HTTP2ErrorCode?, byPeer: Bool = true, now: NIODeadline, into actions: inout [Action]
    ) {
        guard let stream = streams.remove(streamID) else { return }
        if stream.status != nil, byPeer { return finished(stream, now: now, into: &actions) }
        let outcome: StreamOutcome
        switch reason {
        case .some(let code) where !byPeer:
            outcome = .lost(stream.job, "the server broke HTTP/2 on the stream (\(code)); it was reset before an answer")
        case .some(.refusedStream):
            outcome = .unprocessed(stream.job)
        case .some where goAwayLastStreamID.map({ streamID > $0 }) ?? false:
            outcome = .unprocessed(stream.job)
        case .some(let code):
            outcome = .lost(stream.job, "stream reset by the server (\(code)) before an answer")
        case .none:
            outcome = .lost(stream.job, "stream closed without an answer")
        }
        actions.append(.streamEnded(outcome))
        pullPending = true
        transitions(into: &actions)
    }

    /// GOAWAY: no new streams here; streams above `lastStreamID` were not processed and go elsewhere.
    mutating func goAwayReceived(lastStreamID: HTTP2StreamNumber, into actions: inout [Action]) {
        goAwayLastStreamID = min(lastStreamID, goAwayLastStreamID ?? lastStreamID)
        if phase != .closed { phase = .draining }
        for (id, _) in streams.all where id > lastStreamID {
            if let stream = streams.remove(id) { actions.append(.streamEnded(.unprocessed(stream.job))) }
        }
        transitions(into: &actions)
    }

    /// A PING acknowledgement: the connection is alive.
    mutating func pingAckReceived(_ data: UInt64) {
        if let outstanding = outstandingPing, outstanding.data == data {
            outstandingPing = nil
        }
    }

    // MARK: Closing

    /// Stop opening streams (shutdown, rolling, a reason that asks for a fresh connection); close
    /// when the last one ends.
    mutating func drain(into actions: inout [Action]) {
        if phase == .waitingForSettings || phase == .active { phase = .draining }
        transitions(into: &actions)
    }

    /// The connection is gone: every unanswered request is lost, and the pool hears how it ended.
    mutating func channelClosed(into actions: inout [Action]) {
        phase = .closed
        if isReady {
            actions.append(.reportClosed)
        } else {
            actions.append(.reportFailed(failure ?? TransportError(.connectionFailed, "\(configuration.authority) closed the connection during setup")))
        }
        for stream in streams.removeAll() { actions.append(.streamEnded(.lost(stream.job, "connection closed before an answer"))) }
    }

    /// Whether a draining connection has finished and can be closed.
    var isDrained: Bool { phase == .draining && streams.isEmpty }

    /// The periodic check: the setup deadline, request deadlines, idle and overdue PINGs, dead
    /// connections, rolling by age; then pull, as streams may have freed.
    mutating func tick(now: NIODeadline, into actions: inout [Action]) {
        guard phase != .closed, !isClosing else { return }
        if !isReady, now - openedAt >= configuration.connectTimeout {
            return fail(
                TransportError(.connectionFailed, "\(configuration.authority) did not complete TLS and HTTP/2 setup within \(configuration.connectTimeout)"),
                into: &actions
            )
        }
        if let outstanding = outstandingPing, now - outstanding.sentAt >= configuration.pingTimeout {
            isClosing = true
            actions.append(.closeGracefully(dead: "no PING answer within \(configuration.pingTimeout)"))
            return
        }

        for (id, stream) in streams.remove(where: { now >= $0.deadline }) {
            actions.append(.cancelStream(id))
            actions.append(.streamEnded(.timedOut(stream.job)))
        }

        if outstandingPing == nil {
            let idle = now - lastReadAt
            let oldest = streams.first?.value.sentAt
            let overdue = oldest.map { now - $0 >= configuration.responseOverdueAfter } ?? false
            if idle >= configuration.idlePingInterval || (overdue && idle >= configuration.responseOverdueAfter) {
                pingCounter &+= 1
                let data = pingCounter
                outstandingPing = (data, now)
                actions.append(.sendPing(data))
            }
        }

        if let maximumAge = configuration.maximumAge, now - openedAt >= maximumAge, phase == .active {
            phase = .draining
        }
        transitions(into: &actions)
        if !isClosing, isReady {
            pullPending = false
            actions.append(.pull)
        }
    }

    // MARK: Private

    private mutating func finish(_ streamID: HTTP2StreamNumber, now: NIODeadline, into actions: inout [Action]) {
        guard let stream = streams.remove(streamID) else { return }
        finished(stream, now: now, into: &actions)
    }

    /// A stream taken out of the table that ended: its answer, or lost without one.
    private mutating func finished(_ stream: consuming Stream, now: NIODeadline, into actions: inout [Action]) {
        if let status = stream.status {
            let answer = HTTP2Answer(status: status, fields: stream.fields, body: stream.body, latency: now - stream.sentAt)
            actions.append(.streamEnded(.response(stream.job, answer)))
        } else {
            actions.append(.streamEnded(.lost(stream.job, "stream ended without a :status")))
        }
        pullPending = true
        transitions(into: &actions)
    }

    /// Setup failed or the channel erred: remember why, and close without a goodbye.
    private mutating func fail(_ error: TransportError, into actions: inout [Action]) {
        if failure == nil { failure = error }
        guard !isClosing else { return }
        isClosing = true
        actions.append(.closeChannel)
    }

    /// Report draining once, and close once drained.
    private mutating func transitions(into actions: inout [Action]) {
        if phase == .draining, !reportedDraining {
            reportedDraining = true
            actions.append(.reportDraining)
        }
        if isDrained, !isClosing {
            isClosing = true
            actions.append(.closeGracefully(dead: nil))
        }
    }
}
