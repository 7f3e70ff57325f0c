@testable import HeraldClient
import HeraldHTTP2
import NIOCore
import Testing

/// The connection's protocol logic as a plain value: no sockets, no event loop, a fake clock.
@Suite("Connection state machine")
struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<String>

    static let configuration = Machine.Configuration(
        maximumStreams: 100, requestTimeout: .seconds(10), idlePingInterval: .seconds(60),
        responseOverdueAfter: .seconds(3), pingTimeout: .seconds(5), maximumStreamsPerConnection: 1000, maximumAge: nil
    )
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func active(limit: Int? = 1000, configuration: Machine.Configuration = configuration) -> Machine {
        var machine = Machine(configuration: configuration, now: start)
        _ = machine.settingsReceived(maximumConcurrentStreams: limit)
        return machine
    }

    @Test("no streams open before the server's first SETTINGS")
    func waitsForSettings() {
        var machine = Machine(configuration: Self.configuration, now: start)
        #expect(machine.availableStreams == 0)
        #expect(machine.isAccepting)
        let grew = machine.settingsReceived(maximumConcurrentStreams: 500)
        #expect(grew)
        #expect(machine.phase == .active)
        #expect(machine.availableStreams == 100)  // our own cap applies
    }

    @Test("the stream budget follows SETTINGS_MAX_CONCURRENT_STREAMS live, down to 1 and back up")
    func followsStreamLimit() {
        var machine = active(limit: 1000)
        let ids = (0..<50).map { machine.openStream(for: "n\($0)", now: start) }
        #expect(ids.map { Int($0) } == Array(stride(from: 1, to: 100, by: 2)))
        #expect(machine.availableStreams == 50)
        let shrank = machine.settingsReceived(maximumConcurrentStreams: 1)
        #expect(!shrank)
        #expect(machine.availableStreams == 0)  // 50 open, limit 1: none until they end
        for id in ids.prefix(49) {
            _ = machine.headersReceived(streamID: id, status: 200, apnsID: nil, uniqueID: nil, endStream: true, now: start)
        }
        #expect(machine.availableStreams == 0)
        _ = machine.headersReceived(streamID: ids[49], status: 200, apnsID: nil, uniqueID: nil, endStream: true, now: start)
        #expect(machine.availableStreams == 1)
        let rose = machine.settingsReceived(maximumConcurrentStreams: 300)
        #expect(rose)
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
        let outcome = machine.headersReceived(streamID: id, status: 200, apnsID: "abc", uniqueID: "u", endStream: true, now: start + .milliseconds(3))
        guard case .response(let job, let response) = outcome else {
            Issue.record("expected a response, got \(String(describing: outcome))")
            return
        }
        #expect(job == "early")
        #expect(response.status == 200 && response.apnsID == "abc" && response.uniqueID == "u")
        #expect(response.latency == .milliseconds(3))
        let afterReset = machine.streamClosed(streamID: id, reason: .noError, now: start)
        #expect(afterReset == nil)  // nothing re-sent
    }

    @Test("headers without END_STREAM, then RST_STREAM(NO_ERROR): the answer still counts")
    func headersThenResetWithoutBody() {
        var machine = active()
        let id = machine.openStream(for: "x", now: start)
        let partial = machine.headersReceived(streamID: id, status: 400, apnsID: nil, uniqueID: nil, endStream: false, now: start)
        #expect(partial == nil)
        guard case .response(_, let response) = machine.streamClosed(streamID: id, reason: .noError, now: start) else {
            Issue.record("expected the 400 to count")
            return
        }
        #expect(response.status == 400)
    }

    @Test("an error body arrives in DATA frames")
    func errorBody() {
        var machine = active()
        let id = machine.openStream(for: "x", now: start)
        _ = machine.headersReceived(streamID: id, status: 410, apnsID: nil, uniqueID: nil, endStream: false, now: start)
        let first = machine.dataReceived(streamID: id, bytes: ByteBuffer(string: #"{"reason":"#), endStream: false, now: start)
        #expect(first == nil)
        let outcome = machine.dataReceived(streamID: id, bytes: ByteBuffer(string: #""Unregistered"}"#), endStream: true, now: start)
        guard case .response(_, let response) = outcome else {
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
        guard case .unprocessed("refused") = machine.streamClosed(streamID: refused, reason: .refusedStream, now: start) else {
            Issue.record("REFUSED_STREAM must be unprocessed")
            return
        }
        guard case .lost("reset", _) = machine.streamClosed(streamID: reset, reason: .internalError, now: start) else {
            Issue.record("INTERNAL_ERROR without answer must be lost")
            return
        }
    }

    @Test("GOAWAY: streams above last-stream-id are unprocessed, the rest finish; then it closes")
    func goAway() {
        var machine = active()
        let ids = (0..<6).map { machine.openStream(for: "n\($0)", now: start) }  // 1, 3, 5, 7, 9, 11
        let outcomes = machine.goAwayReceived(lastStreamID: ids[2])
        let resent = outcomes.compactMap { outcome -> String? in
            if case .unprocessed(let job) = outcome { return job }
            return nil
        }
        #expect(Set(resent) == ["n3", "n4", "n5"])
        #expect(machine.phase == .draining)
        #expect(machine.availableStreams == 0)
        #expect(!machine.isDrained)
        for id in ids.prefix(3) {
            _ = machine.headersReceived(streamID: id, status: 200, apnsID: nil, uniqueID: nil, endStream: true, now: start)
        }
        #expect(machine.isDrained)
        let actions = machine.tick(now: start)
        #expect(actions.closeConnection)
    }

    @Test("a request past its deadline is cancelled and reported timed out")
    func requestDeadline() {
        var machine = active()
        let late = machine.openStream(for: "late", now: start)
        let fresh = machine.openStream(for: "fresh", now: start + .seconds(8))
        let actions = machine.tick(now: start + .seconds(10))
        #expect(actions.cancelStreams == [late])
        #expect(actions.outcomes.count == 1)
        #expect(machine.openStreams == 1)
        _ = fresh
    }

    @Test("PING when idle, and when an answer is overdue; an unanswered PING means a dead connection")
    func liveness() {
        var machine = active()
        let early = machine.tick(now: start + .seconds(59))
        #expect(early.ping == nil)
        let idlePing = machine.tick(now: start + .seconds(60)).ping
        #expect(idlePing != nil)
        machine.pingAckReceived(idlePing!)
        machine.read(now: start + .seconds(61))

        _ = machine.openStream(for: "slow", now: start + .seconds(61))
        let notYet = machine.tick(now: start + .seconds(63))
        #expect(notYet.ping == nil)
        let overduePing = machine.tick(now: start + .seconds(64)).ping
        #expect(overduePing != nil)
        let waiting = machine.tick(now: start + .seconds(68))
        #expect(waiting.closeConnection == false)
        let dead = machine.tick(now: start + .seconds(69))
        #expect(dead.closeConnection)
        #expect(dead.deadReason != nil)
        let lost = machine.channelClosed()
        #expect(lost.count == 1)
    }

    @Test("a connection is rolled before its stream IDs run out")
    func rolling() {
        var configuration = Self.configuration
        configuration.maximumStreamsPerConnection = 3
        var machine = active(configuration: configuration)
        #expect(machine.availableStreams == 3)
        for n in 0..<3 { _ = machine.openStream(for: "n\(n)", now: start) }
        #expect(machine.phase == .draining)
        #expect(machine.availableStreams == 0)
    }

    @Test("a connection past its maximum age drains")
    func maximumAge() {
        var configuration = Self.configuration
        configuration.maximumAge = .hours(1)
        var machine = active(configuration: configuration)
        _ = machine.tick(now: start + .minutes(59))
        #expect(machine.phase == .active)
        let old = machine.tick(now: start + .minutes(60))
        #expect(old.closeConnection)
    }

    @Test("closing the channel loses every unanswered request")
    func channelClosed() {
        var machine = active()
        for n in 0..<5 { _ = machine.openStream(for: "n\(n)", now: start) }
        let lost = machine.channelClosed()
        #expect(lost.count == 5)
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
