import HeraldHTTP2
import NIOCore

/// The life of one HTTP/2 connection to APNs, as a plain value: which streams are open, how many
/// more may open (the server's SETTINGS_MAX_CONCURRENT_STREAMS, followed live), GOAWAY draining,
/// PING liveness and per-request deadlines. It performs no I/O: it returns what to do, and
/// ``ConnectionHandler`` does it. Generic over the job so it is tested with plain values.
struct ConnectionStateMachine<Job> {
    struct Configuration {
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
        case response(Job, Response)
        /// The server did not process the request (REFUSED_STREAM, above a GOAWAY's last stream
        /// ID): safe to send again, elsewhere.
        case unprocessed(Job)
        /// The connection or stream failed before an answer: the request may or may not have been delivered.
        case lost(Job, String)
        /// No answer before the request deadline.
        case timedOut(Job)
    }

    struct Response {
        var status: Int
        var apnsID: String?
        var uniqueID: String?
        /// `apns-channel-id` and `apns-request-id`, for channel management and broadcasts.
        var channelID: String? = nil
        var requestID: String? = nil
        var body: [UInt8]
        var latency: TimeAmount
    }

    /// What a timer tick asks for.
    struct TickActions {
        var ping: UInt64?
        var cancelStreams: [HTTP2StreamNumber] = []
        var outcomes: [StreamOutcome] = []
        var closeConnection = false
        var deadReason: String?
    }

    private struct Stream {
        var job: Job
        var sentAt: NIODeadline
        /// When the attempt times out: the request timeout counted from when it was queued.
        var deadline: NIODeadline
        var status: Int?
        var apnsID: String?
        var uniqueID: String?
        var channelID: String?
        var requestID: String?
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

    // MARK: Events

    /// Something was read: the connection is alive.
    mutating func read(now: NIODeadline) {
        lastReadAt = now
    }

    /// The server's SETTINGS: follow its stream limit (it can drop to 1 and rise again, §1.3).
    /// Returns true when streams may now open that could not before.
    mutating func settingsReceived(maximumConcurrentStreams: Int?) -> Bool {
        let before = availableStreams
        if let maximumConcurrentStreams {
            remoteMaximumStreams = maximumConcurrentStreams
        } else if phase == .waitingForSettings {
            // Absent means unlimited (RFC 9113 §6.5.2); our own maximum applies.
            remoteMaximumStreams = .max
        }
        if phase == .waitingForSettings { phase = .active }
        return availableStreams > before
    }

    /// Opens a stream for `job`. Call only while ``availableStreams`` > 0.
    ///
    /// - Parameter deadline: when the attempt times out; by default the request timeout from now.
    ///   The client counts it from when the notification was queued, so waiting for a stream counts.
    mutating func openStream(for job: Job, now: NIODeadline, deadline: NIODeadline? = nil) -> HTTP2StreamNumber {
        precondition(availableStreams > 0, "no stream budget")
        let id = nextStreamID
        nextStreamID += 2
        streams.append(id, Stream(job: job, sentAt: now, deadline: deadline ?? now + configuration.requestTimeout))
        streamsOpened += 1
        if streamsOpened >= configuration.maximumStreamsPerConnection { phase = .draining }
        return id
    }

    /// Response headers. A complete answer (END_STREAM) ends the stream at once.
    mutating func headersReceived(
        streamID: HTTP2StreamNumber, status: Int?, apnsID: String?, uniqueID: String?, endStream: Bool, now: NIODeadline,
        channelID: String? = nil, requestID: String? = nil
    ) -> StreamOutcome? {
        guard var stream = streams[streamID] else { return nil }
        if let status, stream.status == nil {
            stream.status = status
            stream.apnsID = apnsID
            stream.uniqueID = uniqueID
            stream.channelID = channelID
            stream.requestID = requestID
        }
        streams[streamID] = stream
        return endStream ? finish(streamID, now: now) : nil
    }

    /// Response body bytes (the JSON error of a rejection).
    mutating func dataReceived(streamID: HTTP2StreamNumber, bytes: ByteBuffer, endStream: Bool, now: NIODeadline) -> StreamOutcome? {
        guard var stream = streams[streamID] else { return nil }
        // An APNs error body is tiny; cap what is kept so a misbehaving server cannot grow memory.
        if stream.body.count < 16 << 10 {
            stream.body.append(contentsOf: bytes.readableBytesView.prefix(16 << 10))
            streams[streamID] = stream
        }
        return endStream ? finish(streamID, now: now) : nil
    }

    /// The stream closed (normally, by RST_STREAM, or by GOAWAY). An answer already received
    /// counts, even if the server then reset the stream with NO_ERROR before reading the whole
    /// request, as HTTP/2 allows.
    /// - Parameter byPeer: false when this side reset the stream because the server broke a rule on it.
    mutating func streamClosed(streamID: HTTP2StreamNumber, reason: HTTP2ErrorCode?, byPeer: Bool = true, now: NIODeadline) -> StreamOutcome? {
        guard let stream = streams[streamID] else { return nil }
        if stream.status != nil, byPeer { return finish(streamID, now: now) }
        streams[streamID] = nil
        switch reason {
        case .some(let code) where !byPeer:
            return .lost(stream.job, "the server broke HTTP/2 on the stream (\(code)); it was reset before an answer")
        case .some(.refusedStream):
            return .unprocessed(stream.job)
        case .some where goAwayLastStreamID.map({ streamID > $0 }) ?? false:
            return .unprocessed(stream.job)
        case .some(let code):
            return .lost(stream.job, "stream reset by the server (\(code)) before an answer")
        case .none:
            return .lost(stream.job, "stream closed without an answer")
        }
    }

    /// GOAWAY: no new streams here; streams above `lastStreamID` were not processed and go elsewhere.
    mutating func goAwayReceived(lastStreamID: HTTP2StreamNumber) -> [StreamOutcome] {
        goAwayLastStreamID = min(lastStreamID, goAwayLastStreamID ?? lastStreamID)
        if phase != .closed { phase = .draining }
        var outcomes: [StreamOutcome] = []
        for (id, stream) in streams.all where id > lastStreamID {
            streams[id] = nil
            outcomes.append(.unprocessed(stream.job))
        }
        return outcomes
    }

    /// A PING acknowledgement: the connection is alive.
    mutating func pingAckReceived(_ data: UInt64) {
        if let outstanding = outstandingPing, outstanding.data == data {
            outstandingPing = nil
        }
    }

    /// Stop opening streams (shutdown, rolling); close when the last one ends.
    mutating func drain() {
        if phase == .waitingForSettings || phase == .active { phase = .draining }
    }

    /// The connection is gone: every unanswered request is lost.
    mutating func channelClosed() -> [StreamOutcome] {
        phase = .closed
        return streams.removeAll().map { StreamOutcome.lost($0.job, "connection closed before an answer") }
    }

    /// Whether a draining connection has finished and can be closed.
    var isDrained: Bool { phase == .draining && streams.isEmpty }

    /// The periodic check: request deadlines, idle and overdue PINGs, dead connections, rolling.
    mutating func tick(now: NIODeadline) -> TickActions {
        var actions = TickActions()
        guard phase != .closed else { return actions }

        if let outstanding = outstandingPing, now - outstanding.sentAt >= configuration.pingTimeout {
            actions.closeConnection = true
            actions.deadReason = "no PING answer within \(configuration.pingTimeout)"
            return actions
        }

        for (id, stream) in streams.remove(where: { now >= $0.deadline }) {
            actions.cancelStreams.append(id)
            actions.outcomes.append(.timedOut(stream.job))
        }

        if outstandingPing == nil {
            let idle = now - lastReadAt
            let oldest = streams.first?.value.sentAt
            let overdue = oldest.map { now - $0 >= configuration.responseOverdueAfter } ?? false
            if idle >= configuration.idlePingInterval || (overdue && idle >= configuration.responseOverdueAfter) {
                pingCounter &+= 1
                let data = pingCounter
                outstandingPing = (data, now)
                actions.ping = data
            }
        }

        if let maximumAge = configuration.maximumAge, now - openedAt >= maximumAge, phase == .active {
            phase = .draining
        }
        if phase == .draining && streams.isEmpty { actions.closeConnection = true }
        return actions
    }

    // MARK: Private

    private mutating func finish(_ streamID: HTTP2StreamNumber, now: NIODeadline) -> StreamOutcome? {
        guard let stream = streams.remove(streamID) else { return nil }
        guard let status = stream.status else {
            return .lost(stream.job, "stream ended without a :status")
        }
        return .response(
            stream.job,
            Response(
                status: status, apnsID: stream.apnsID, uniqueID: stream.uniqueID, channelID: stream.channelID,
                requestID: stream.requestID, body: stream.body, latency: now - stream.sentAt
            )
        )
    }

}
