import HeraldCore
@testable import HeraldLegacy
import NIOCore
import Testing

/// The recovery logic of apns-spec §4.4-§4.5, driven by hand: no sockets, no clocks.
@Suite("Legacy state machine")
struct StateMachineTests {
    typealias Machine = LegacyStateMachine<Int>

    static func configuration(
        command: LegacyCommand = .frame, buffer: Int = 100, framing: TimeAmount = .milliseconds(10), maximumDrops: Int = 3,
        connectAttempts: Int = 3
    ) -> Machine.Configuration {
        .init(
            command: command, bufferCapacity: buffer, settleInterval: .seconds(1), framingTimeout: framing, maximumDrops: maximumDrops,
            reconnectInitialBackoff: .milliseconds(100), reconnectMaximumBackoff: .milliseconds(350), maximumConnectAttempts: connectAttempts
        )
    }

    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func items(_ range: Range<Int>) -> [(LegacyNotification, Int)] {
        range.map { (legacyNotification($0), $0) }
    }

    /// The notifications in written bytes: (identifier, job number from the token).
    func frames(_ writes: [ByteBuffer]) -> [(identifier: UInt32, number: Int)] {
        var result: [(UInt32, Int)] = []
        for var write in writes {
            while let parsed = LegacyFrameParser.next(&write) {
                guard case .frame(let frame) = parsed else { Issue.record("invalid frame written"); break }
                let number = frame.token.suffix(8).reduce(0) { $0 << 8 | Int($1) }
                result.append((frame.identifier ?? 0, number))
            }
            #expect(write.readableBytes == 0)
        }
        return result
    }

    /// A machine connected with `count` notifications written and flushed at `start`.
    func connectedMachine(_ count: Int, configuration: Machine.Configuration = configuration()) -> (Machine, [(identifier: UInt32, number: Int)]) {
        var machine = Machine(configuration: configuration)
        let submitted = machine.submit(items(0..<count), now: start)
        #expect(submitted.connect)
        var writes = machine.connected(now: start).writes
        writes += machine.flushTimerFired(now: start).writes
        return (machine, frames(writes))
    }

    func results(_ completions: [Machine.Completion]) -> [Int: LegacyOutcome.Result] {
        Dictionary(uniqueKeysWithValues: completions.map { ($0.job, $0.result) })
    }

    @Test("notifications wait for a connection, then go out batched after the framing timeout with increasing identifiers")
    func batching() {
        var machine = Machine(configuration: Self.configuration())
        let first = machine.submit(items(0..<5), now: start)
        #expect(first.connect && first.writes.isEmpty)
        let connected = machine.connected(now: start)
        #expect(connected.writes.isEmpty, "batched until the framing timeout")
        #expect(connected.armFlushTimer == start + .milliseconds(10))
        let more = machine.submit(items(5..<8), now: start + .milliseconds(3))
        #expect(more.writes.isEmpty && more.armFlushTimer == nil, "the timer is already armed")
        let flushed = machine.flushTimerFired(now: start + .milliseconds(10))
        #expect(flushed.writes.count == 1, "one TCP write for the batch")
        let written = frames(flushed.writes)
        #expect(written.map(\.number) == Array(0..<8))
        #expect(written.map(\.identifier) == Array(1...8))
    }

    @Test("a write is flushed before the next frame would pass 65,535 bytes")
    func writeSizeLimit() {
        var machine = Machine(configuration: Self.configuration())
        _ = machine.submit(items(0..<2_000), now: start)
        var writes = machine.connected(now: start).writes
        writes += machine.flushTimerFired(now: start).writes
        #expect(writes.count > 1)
        #expect(writes.allSatisfy { $0.readableBytes <= 65_535 })
        #expect(writes.dropLast().allSatisfy { $0.readableBytes > 65_535 - 200 }, "each full write is filled up to the limit")
        #expect(frames(writes).map(\.number) == Array(0..<2_000))
    }

    @Test("a negative framing timeout writes each frame at once")
    func writeEachFrame() {
        var machine = Machine(configuration: Self.configuration(framing: .milliseconds(-1)))
        _ = machine.submit(items(0..<4), now: start)
        let connected = machine.connected(now: start)
        #expect(connected.writes.count == 4)
        #expect(connected.armFlushTimer == nil)
    }

    @Test("without an error response, notifications are accepted once the settle interval has passed, in order")
    func settling() {
        var (machine, _) = connectedMachine(3)
        #expect(machine.tick(now: start + .milliseconds(999)).completions.isEmpty)
        let settled = machine.tick(now: start + .seconds(1))
        #expect(settled.completions.map(\.job) == [0, 1, 2])
        #expect(settled.completions.allSatisfy { $0.result == .accepted && $0.attempts == 1 })
        #expect(machine.unsettledCount == 0)
    }

    @Test("an error response: before it accepted, it rejected with its status, after it sent again in order on a new connection")
    func errorRecovery() {
        var (machine, written) = connectedMachine(10)
        let failing = written[4].identifier
        let answered = machine.received(LegacyErrorResponse(status: .invalidToken, identifier: failing), now: start + .milliseconds(5))
        #expect(answered.close)
        let outcome = results(answered.completions)
        #expect(outcome.count == 5)
        for number in 0..<4 { #expect(outcome[number] == .accepted) }
        #expect(outcome[4] == .rejected(.invalidToken))
        #expect(machine.pendingCount == 5)

        let closed = machine.connectionClosed(now: start + .milliseconds(6))
        #expect(closed.connect, "reconnects at once after an error response")
        var rewritten = machine.connected(now: start + .milliseconds(7)).writes
        rewritten += machine.flushTimerFired(now: start + .milliseconds(17)).writes
        let again = frames(rewritten)
        #expect(again.map(\.number) == Array(5..<10))
        #expect(again.map(\.identifier) == Array(11...15), "re-sends get new identifiers")
        let settled = machine.tick(now: start + .seconds(2))
        #expect(settled.completions.map(\.job) == Array(5..<10))
        #expect(settled.completions.allSatisfy { $0.attempts == 2 })
    }

    @Test("status 10 (shutdown) names the last processed notification: it and those before are accepted, the rest sent again")
    func shutdownStatus() {
        var (machine, written) = connectedMachine(6)
        let answered = machine.received(LegacyErrorResponse(status: .shutdown, identifier: written[2].identifier), now: start)
        #expect(answered.completions.map(\.job) == [0, 1, 2])
        #expect(answered.completions.allSatisfy { $0.result == .accepted })
        #expect(machine.pendingCount == 3)
        _ = machine.connectionClosed(now: start)
        let rewritten = machine.connected(now: start).writes + machine.flushTimerFired(now: start).writes
        #expect(frames(rewritten).map(\.number) == [3, 4, 5])
    }

    @Test("when the buffer no longer holds what must be sent again, those notifications are reported as possibly lost")
    func bufferOverflow() {
        var (machine, written) = connectedMachine(10, configuration: Self.configuration(buffer: 3))
        let answered = machine.received(LegacyErrorResponse(status: .processingError, identifier: written[1].identifier), now: start)
        let outcome = results(answered.completions)
        #expect(outcome[0] == .accepted)
        #expect(outcome[1] == .rejected(.processingError))
        for number in 2..<7 {
            guard case .failed(let error) = outcome[number] else {
                Issue.record("notification \(number) was not reported: \(String(describing: outcome[number]))")
                continue
            }
            #expect(error.code == .possiblyLost)
            #expect(error.message.contains("3-notification re-send buffer"))
        }
        #expect(outcome.count == 7)
        #expect(machine.pendingCount == 3, "the three the buffer still holds are sent again")
        #expect(answered.warnings.contains { $0.contains("5 notification(s) could not be sent again") })
    }

    @Test("a connection that drops without an error response sends every unsettled notification again, then gives up after maximumDrops")
    func drops() {
        var (machine, _) = connectedMachine(3, configuration: Self.configuration(maximumDrops: 2))
        var now = start
        let dropped = machine.connectionClosed(now: now)
        #expect(dropped.completions.isEmpty)
        #expect(dropped.reconnectAt == now + .milliseconds(100))
        #expect(machine.pendingCount == 3)
        now = now + .milliseconds(100)
        #expect(machine.reconnectTimerFired(now: now).connect)
        _ = machine.connected(now: now)
        _ = machine.flushTimerFired(now: now)
        let droppedAgain = machine.connectionClosed(now: now)
        #expect(droppedAgain.completions.count == 3)
        for completion in droppedAgain.completions {
            guard case .failed(let error) = completion.result else {
                Issue.record("expected a failure")
                continue
            }
            #expect(error.code == .connectionFailed)
            #expect(completion.attempts == 2)
        }
        #expect(droppedAgain.reconnectAt == nil, "nothing left to send")
    }

    @Test("an identifier this connection never sent (command 0 has none) sends everything unsettled again, counted as a drop")
    func unknownIdentifier() {
        var (machine, _) = connectedMachine(3, configuration: Self.configuration(command: .simple, maximumDrops: 1))
        let answered = machine.received(LegacyErrorResponse(status: .invalidToken, identifier: 0), now: start)
        #expect(answered.close)
        #expect(answered.completions.count == 3, "with maximumDrops 1 they fail rather than loop")
        #expect(answered.completions.allSatisfy {
            if case .failed(let error) = $0.result { return error.code == .connectionFailed }
            return false
        })
    }

    @Test("an error for a notification that already settled is reported, and the unsettled ones are sent again")
    func settledTooEarly() {
        var (machine, written) = connectedMachine(2)
        _ = machine.tick(now: start + .seconds(1))
        let later = machine.submit(items(2..<4), now: start + .seconds(1))
        #expect(later.writes.isEmpty)
        _ = machine.flushTimerFired(now: start + .seconds(1))
        let answered = machine.received(LegacyErrorResponse(status: .invalidToken, identifier: written[0].identifier), now: start + .seconds(1))
        #expect(answered.warnings.contains { $0.contains("already settled") })
        #expect(answered.completions.isEmpty)
        #expect(machine.pendingCount == 2)
    }

    @Test("failed connection attempts back off (doubling, capped); after the last one waiting notifications fail")
    func connectFailures() {
        var machine = Machine(configuration: Self.configuration(connectAttempts: 3))
        _ = machine.submit(items(0..<2), now: start)
        let first = machine.connectFailed("refused", now: start)
        #expect(first.reconnectAt == start + .milliseconds(100))
        #expect(machine.reconnectTimerFired(now: start + .milliseconds(100)).connect)
        let second = machine.connectFailed("refused", now: start + .milliseconds(100))
        #expect(second.reconnectAt == start + .milliseconds(300))
        #expect(machine.reconnectTimerFired(now: start + .milliseconds(300)).connect)
        let third = machine.connectFailed("refused", now: start + .milliseconds(300))
        #expect(third.completions.count == 2)
        #expect(third.completions.allSatisfy {
            if case .failed(let error) = $0.result { return error.code == .connectionFailed && error.message.contains("refused") }
            return false
        })
        #expect(machine.submit(items(2..<3), now: start + .seconds(1)).connect, "a later send tries again")
    }

    @Test("shutdown writes what is batched at once, waits for every outcome, closes, and refuses new notifications")
    func shutdown() {
        var machine = Machine(configuration: Self.configuration())
        _ = machine.submit(items(0..<3), now: start)
        _ = machine.connected(now: start)
        let shutdown = machine.shutdown(now: start)
        #expect(frames(shutdown.writes).map(\.number) == [0, 1, 2], "no waiting for the framing timeout")
        #expect(!shutdown.close && !shutdown.shutdownComplete)
        let refused = machine.submit(items(3..<4), now: start)
        #expect(refused.completions.first?.result == .failed(LegacyError(.shutdown, "the client is shutting down")))
        let settled = machine.tick(now: start + .seconds(1))
        #expect(settled.completions.count == 3)
        #expect(settled.close)
        #expect(machine.connectionClosed(now: start + .seconds(1)).shutdownComplete)
    }

    @Test("identifiers wrap past 2^32 - 1 skipping 0, and errors are still matched")
    func identifierWrap() {
        var machine = Machine(configuration: Self.configuration())
        machine.nextIdentifier = UInt32.max - 1
        _ = machine.submit(items(0..<4), now: start)
        _ = machine.connected(now: start)
        let written = frames(machine.flushTimerFired(now: start).writes)
        #expect(written.map(\.identifier) == [UInt32.max - 1, UInt32.max, 1, 2])
        let answered = machine.received(LegacyErrorResponse(status: .invalidToken, identifier: 1), now: start)
        #expect(results(answered.completions) == [0: .accepted, 1: .accepted, 2: .rejected(.invalidToken)])
        #expect(machine.pendingCount == 1)
    }
}
