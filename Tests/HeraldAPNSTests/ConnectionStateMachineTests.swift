@testable import HeraldTransport
import HeraldHTTP2
import NIOCore
import Testing

/// The connection's protocol logic as a plain value: no sockets, no event loop, a fake clock.
@Suite("Connection state machine")
struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<String>

    static let configuration = Machine.Configuration(
        authority: "api.example:443", connectTimeout: .seconds(10), maximumStreams: 100, requestTimeout: .seconds(10), idlePingInterval: .seconds(60),
        responseOverdueAfter: .seconds(3), pingTimeout: .seconds(5), maximumStreamsPerConnection: 1000, maximumAge: nil
    )
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func active(limit: Int? = 1000, configuration: Machine.Configuration = configuration) -> Machine {
        var machine = Machine(configuration: configuration, now: start)
        var ignored: [Machine.Action] = []
        machine.channelActive(into: &ignored)
        machine.settingsReceived(maximumConcurrentStreams: limit, into: &ignored)
        return machine
    }

    /// Runs one event on `machine` and returns the actions it asked for.
    func run(_ machine: inout Machine, _ event: (inout Machine, inout [Machine.Action]) -> Void) -> [Machine.Action] {
        var actions: [Machine.Action] = []
        event(&machine, &actions)
        return actions
    }

    /// The streams that ended, in the actions.
    func outcomes(_ actions: [Machine.Action]) -> [Machine.StreamOutcome] {
        actions.compactMap { if case .streamEnded(let outcome) = $0 { return outcome } else { return nil } }
    }

    /// The actions other than streams ending, readable.
    func describe(_ actions: [Machine.Action]) -> [String] {
        actions.compactMap { action in
            switch action {
            case .startProtocol: "start"
            case .reportReady: "ready"
            case .reportDraining: "draining"
            case .pull: "pull"
            case .sendPing: "ping"
            case .cancelStream(let id): "cancel \(id)"
            case .streamEnded: nil
            case .closeGracefully(let dead): dead == nil ? "goodbye" : "goodbye, dead"
            case .closeForProtocolError: "protocol error"
            case .closeChannel: "close"
            case .reportClosed: "closed"
            case .reportFailed(let error): "failed \(error.code)"
            }
        }
    }

    @Test("setup: the preface once, no streams before the server's first SETTINGS, which makes the connection ready")
    func setup() {
        var machine = Machine(configuration: Self.configuration, now: start)
        #expect(describe(run(&machine) { $0.channelActive(into: &$1) }) == ["start"])
        #expect(describe(run(&machine) { $0.channelActive(into: &$1) }) == [], "once")
        #expect(run(&machine) { $0.handshakeCompleted(alpn: "h2", into: &$1) }.isEmpty)
        #expect(machine.availableStreams == 0)
        #expect(machine.isAccepting)
        #expect(describe(run(&machine) { $0.settingsReceived(maximumConcurrentStreams: 500, into: &$1) }) == ["ready"])
        #expect(machine.phase == .active)
        #expect(machine.availableStreams == 100)  // our own cap applies
        #expect(describe(run(&machine) { $0.readComplete(into: &$1) }) == ["pull"], "work is pulled once the read is done")
        #expect(describe(run(&machine) { $0.readComplete(into: &$1) }) == [])
    }

    @Test("a server that does not agree to h2 is closed, and the pool hears that it offered no HTTP/2")
    func alpnRefused() {
        var machine = Machine(configuration: Self.configuration, now: start)
        _ = run(&machine) { $0.channelActive(into: &$1) }
        #expect(describe(run(&machine) { $0.handshakeCompleted(alpn: "http/1.1", into: &$1) }) == ["close"])
        #expect(machine.failure?.message == "api.example:443 did not agree to HTTP/2 (ALPN h2)")
        #expect(describe(run(&machine) { $0.channelClosed(into: &$1) }) == ["failed http2NotOffered"])
    }

    @Test("setup that takes longer than the connect timeout fails the connection")
    func setupTimeout() {
        var machine = Machine(configuration: Self.configuration, now: start)
        _ = run(&machine) { $0.channelActive(into: &$1) }
        #expect(describe(run(&machine) { $0.tick(now: start + .seconds(9), into: &$1) }) == [])
        #expect(describe(run(&machine) { $0.tick(now: start + .seconds(10), into: &$1) }) == ["close"])
        #expect(describe(run(&machine) { $0.tick(now: start + .seconds(11), into: &$1) }) == [], "closing once")
        #expect(describe(run(&machine) { $0.channelClosed(into: &$1) }) == ["failed connectionFailed"])
    }

    @Test("an HTTP/2 violation closes with GOAWAY once; the first failure is the one reported")
    func protocolError() {
        var machine = active()
        let error = HTTP2ConnectionError(.protocolError, "bad frame")
        #expect(describe(run(&machine) { $0.protocolError(error, into: &$1) }) == ["protocol error"])
        #expect(describe(run(&machine) { $0.protocolError(error, into: &$1) }) == [])
        #expect(machine.failure?.code == .protocolError)
        #expect(describe(run(&machine) { $0.channelClosed(into: &$1) }) == ["closed"], "it had been ready: closed, not failed")
    }

    @Test("the stream budget follows SETTINGS_MAX_CONCURRENT_STREAMS live, down to 1 and back up")
    func followsStreamLimit() {
        var machine = active(limit: 1000)
        let ids = (0..<50).map { machine.openStream(for: "n\($0)", now: start) }
        #expect(ids.map { Int($0) } == Array(stride(from: 1, to: 100, by: 2)))
        #expect(machine.availableStreams == 50)
        _ = run(&machine) { $0.readComplete(into: &$1) }
        _ = run(&machine) { $0.settingsReceived(maximumConcurrentStreams: 1, into: &$1) }
        #expect(describe(run(&machine) { $0.readComplete(into: &$1) }) == [], "the budget shrank: nothing to pull")
        #expect(machine.availableStreams == 0)  // 50 open, limit 1: none until they end
        for id in ids.prefix(49) {
            _ = run(&machine) { $0.headersReceived(streamID: id, status: 200, endStream: true, now: start, into: &$1) }
        }
        #expect(machine.availableStreams == 0)
        _ = run(&machine) { $0.headersReceived(streamID: ids[49], status: 200, endStream: true, now: start, into: &$1) }
        #expect(machine.availableStreams == 1)
        _ = run(&machine) { $0.readComplete(into: &$1) }
        _ = run(&machine) { $0.settingsReceived(maximumConcurrentStreams: 300, into: &$1) }
        #expect(describe(run(&machine) { $0.readComplete(into: &$1) }) == ["pull"], "the budget grew")
        #expect(machine.availableStreams == 100)
    }

    @Test("SETTINGS without a stream limit means unlimited: our own cap applies")
    func unlimited() {
        let machine = active(limit: nil)
        #expect(machine.availableStreams == 100)
    }

    @Test("a complete answer counts even when the server then resets the stream with NO_ERROR")
    func answerThenReset() {
        var machine = active()
        let id = machine.openStream(for: "early", now: start)
        let ended = outcomes(run(&machine) {
            $0.headersReceived(streamID: id, status: 200, fields: [HTTP2Field(name: "apns-id", value: "abc"), HTTP2Field(name: "apns-unique-id", value: "u")], endStream: true, now: start + .milliseconds(3), into: &$1)
        })
        guard ended.count == 1, case .response(let job, let response) = ended[0] else {
            Issue.record("expected a response, got \(ended)")
            return
        }
        #expect(job == "early")
        #expect(response.status == 200 && response["apns-id"] == "abc" && response["apns-unique-id"] == "u")
        #expect(response.latency == .milliseconds(3))
        #expect(run(&machine) { $0.streamClosed(streamID: id, reason: .noError, now: start, into: &$1) }.isEmpty, "nothing re-sent")
    }

    @Test("headers without END_STREAM, then RST_STREAM(NO_ERROR): the answer still counts")
    func headersThenResetWithoutBody() {
        var machine = active()
        let id = machine.openStream(for: "x", now: start)
        let partial = run(&machine) { $0.headersReceived(streamID: id, status: 400, endStream: false, now: start, into: &$1) }
        #expect(partial.isEmpty)
        let ended = outcomes(run(&machine) { $0.streamClosed(streamID: id, reason: .noError, now: start, into: &$1) })
        guard ended.count == 1, case .response(_, let response) = ended[0] else {
            Issue.record("expected the 400 to count")
            return
        }
        #expect(response.status == 400)
    }

    @Test("an error body arrives in DATA frames")
    func errorBody() {
        var machine = active()
        let id = machine.openStream(for: "x", now: start)
        _ = run(&machine) { $0.headersReceived(streamID: id, status: 410, endStream: false, now: start, into: &$1) }
        let first = run(&machine) { $0.dataReceived(streamID: id, bytes: ByteBuffer(string: #"{"reason":"#), endStream: false, now: start, into: &$1) }
        #expect(first.isEmpty)
        let ended = outcomes(run(&machine) { $0.dataReceived(streamID: id, bytes: ByteBuffer(string: #""Unregistered"}"#), endStream: true, now: start, into: &$1) })
        guard ended.count == 1, case .response(_, let response) = ended[0] else {
            Issue.record("expected a response")
            return
        }
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"reason":"Unregistered"}"#)
    }

    @Test("REFUSED_STREAM is unprocessed (re-sent); other resets without an answer are lost")
    func resets() {
        var machine = active()
        let refused = machine.openStream(for: "refused", now: start)
        let reset = machine.openStream(for: "reset", now: start)
        #expect(outcomes(run(&machine) { $0.streamClosed(streamID: refused, reason: .refusedStream, now: start, into: &$1) }) == [.unprocessed("refused")])
        #expect(outcomes(run(&machine) { $0.streamClosed(streamID: reset, reason: .internalError, now: start, into: &$1) }) == [.lost("reset", "")])
    }

    @Test("GOAWAY: streams above last-stream-id are unprocessed, draining is reported once, the rest finish; then it says goodbye")
    func goAway() {
        var machine = active()
        let ids = (0..<6).map { machine.openStream(for: "n\($0)", now: start) }  // 1, 3, 5, 7, 9, 11
        let actions = run(&machine) { $0.goAwayReceived(lastStreamID: ids[2], into: &$1) }
        #expect(Set(outcomes(actions).compactMap { if case .unprocessed(let job) = $0 { job } else { nil } }) == ["n3", "n4", "n5"])
        #expect(describe(actions) == ["draining"])
        #expect(machine.phase == .draining)
        #expect(machine.availableStreams == 0)
        #expect(!machine.isDrained)
        var last: [Machine.Action] = []
        for id in ids.prefix(3) {
            last = run(&machine) { $0.headersReceived(streamID: id, status: 200, endStream: true, now: start, into: &$1) }
        }
        #expect(machine.isDrained)
        #expect(describe(last) == ["goodbye"], "the last answer closes it, and draining is not reported again")
    }

    @Test("a request past its deadline is cancelled and reported timed out")
    func requestDeadline() {
        var machine = active()
        let late = machine.openStream(for: "late", now: start)
        _ = machine.openStream(for: "fresh", now: start + .seconds(8))
        let actions = run(&machine) { $0.tick(now: start + .seconds(10), into: &$1) }
        #expect(describe(actions) == ["cancel \(late)", "pull"])
        #expect(outcomes(actions) == [.timedOut("late")])
        #expect(machine.openStreams == 1)
    }

    @Test("PING when idle, and when an answer is overdue; an unanswered PING means a dead connection")
    func liveness() {
        var machine = active()
        #expect(describe(run(&machine) { $0.tick(now: start + .seconds(59), into: &$1) }) == ["pull"])
        let idle = run(&machine) { $0.tick(now: start + .seconds(60), into: &$1) }
        guard case .sendPing(let idlePing) = idle.first else {
            Issue.record("expected a PING, got \(describe(idle))")
            return
        }
        machine.pingAckReceived(idlePing)
        machine.read(now: start + .seconds(61))

        _ = machine.openStream(for: "slow", now: start + .seconds(61))
        #expect(describe(run(&machine) { $0.tick(now: start + .seconds(63), into: &$1) }) == ["pull"])
        #expect(describe(run(&machine) { $0.tick(now: start + .seconds(64), into: &$1) }) == ["ping", "pull"], "an answer is overdue")
        #expect(describe(run(&machine) { $0.tick(now: start + .seconds(68), into: &$1) }) == ["pull"])
        #expect(describe(run(&machine) { $0.tick(now: start + .seconds(69), into: &$1) }) == ["goodbye, dead"])
        let closed = run(&machine) { $0.channelClosed(into: &$1) }
        #expect(outcomes(closed) == [.lost("slow", "")])
        #expect(describe(closed) == ["closed"])
    }

    @Test("a connection is rolled before its stream IDs run out")
    func rolling() {
        var configuration = Self.configuration
        configuration.maximumStreamsPerConnection = 3
        var machine = active(configuration: configuration)
        #expect(machine.availableStreams == 3)
        for n in 0..<3 { _ = machine.openStream(for: "n\(n)", now: start) }
        #expect(describe(run(&machine) { $0.streamsOpened(into: &$1) }) == ["draining"])
        #expect(machine.phase == .draining)
        #expect(machine.availableStreams == 0)
    }

    @Test("a connection past its maximum age drains, and closes as it has no streams")
    func maximumAge() {
        var configuration = Self.configuration
        configuration.maximumAge = .hours(1)
        var machine = active(configuration: configuration)
        if case .sendPing(let data) = run(&machine, { $0.tick(now: start + .minutes(59), into: &$1) }).first {
            machine.pingAckReceived(data)  // alive: the idle PING was answered
        }
        machine.read(now: start + .minutes(60) - .seconds(1))
        #expect(machine.phase == .active)
        #expect(describe(run(&machine) { $0.tick(now: start + .minutes(60), into: &$1) }) == ["draining", "goodbye"])
    }

    @Test("draining on request (shutdown, a fresh connection wanted) is reported once")
    func drainOnRequest() {
        var machine = active()
        _ = machine.openStream(for: "n", now: start)
        #expect(describe(run(&machine) { $0.drain(into: &$1) }) == ["draining"])
        #expect(describe(run(&machine) { $0.drain(into: &$1) }) == [])
        #expect(!machine.isAccepting)
    }

    @Test("closing the channel loses every unanswered request")
    func channelClosed() {
        var machine = active()
        for n in 0..<5 { _ = machine.openStream(for: "n\(n)", now: start) }
        let closed = run(&machine) { $0.channelClosed(into: &$1) }
        #expect(outcomes(closed).count == 5)
        #expect(machine.phase == .closed)
        #expect(machine.availableStreams == 0)
    }
}

extension ConnectionStateMachine.StreamOutcome: Equatable where Job: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.response(let a, let x), .response(let b, let y)): a == b && x.status == y.status
        case (.unprocessed(let a), .unprocessed(let b)): a == b
        case (.lost(let a, _), .lost(let b, _)): a == b
        case (.timedOut(let a), .timedOut(let b)): a == b
        default: false
        }
    }
}
