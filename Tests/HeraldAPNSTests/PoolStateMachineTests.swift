@testable import HeraldTransport
import NIOCore
import Testing

/// The pool's decisions as plain values: no sockets, no clocks, no locks.
@Suite("Pool state machine")
struct PoolStateMachineTests {
    typealias Machine = PoolStateMachine<Int, String>

    static func machine(connections: Int = 2, attempts: Int = 3) -> Machine {
        Machine(
            configuration: .init(
                maximumConnections: connections, reconnectInitialBackoff: .milliseconds(100),
                reconnectMaximumBackoff: .milliseconds(350), maximumConnectAttempts: attempts
            )
        )
    }

    static let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    static let deadline = now + .seconds(15)

    /// A readable form of actions, for comparing.
    static func describe(_ actions: [Machine.Action]?) -> [String] {
        (actions ?? []).map { action in
            switch action {
            case .wake(let handle): "wake \(handle)"
            case .open(let id): "open \(id)"
            case .scheduleReconnect(let delay): "reconnect after \(delay.nanoseconds / 1_000_000) ms"
            case .failUnconnectable(let jobs): "fail unconnectable \(jobs)"
            case .failTimedOut(let jobs, let ready): "fail timed out \(jobs) with \(ready) ready"
            case .close(let handle): "close \(handle)"
            }
        }
    }

    @Test("grows on demand: one connection opens at a time, another only when the open ones cannot take the queue, up to the maximum")
    func growth() {
        var pool = Self.machine(connections: 2)
        #expect(Self.describe(pool.submit([1, 2, 3], deadline: Self.deadline)) == ["open 0"])
        #expect(Self.describe(pool.submit([4], deadline: Self.deadline)) == [], "one connection is opening already")
        #expect(Self.describe(pool.connectionReady(0, handle: "c0")) == [])
        // Connection 0 has 2 streams: it takes 2 of 4, and the rest needs another connection.
        let (jobs, actions) = pool.dequeue(for: 0, maximum: 2)
        #expect(jobs == [1, 2])
        #expect(Self.describe(actions) == ["open 1"])
        #expect(Self.describe(pool.connectionReady(1, handle: "c1")) == [])
        #expect(pool.dequeue(for: 1, maximum: 10).jobs == [3, 4])
        // Both at the maximum; more work wakes connection 1, which had streams to spare, and opens none.
        #expect(Self.describe(pool.submit([5], deadline: Self.deadline)) == ["wake c1"])
        #expect(pool.connectionCount == 2)
        #expect(pool.activeJobs == 5)
    }

    @Test("a connection that finds the queue empty goes idle and is woken, once, when work arrives")
    func idleConnectionsAreWoken() {
        var pool = Self.machine(connections: 1)
        _ = pool.submit([1], deadline: Self.deadline)
        _ = pool.connectionReady(0, handle: "c0")
        #expect(pool.dequeue(for: 0, maximum: 100).jobs == [1])
        #expect(Self.describe(pool.submit([2], deadline: Self.deadline)) == ["wake c0"])
        #expect(Self.describe(pool.submit([3], deadline: Self.deadline)) == [], "already woken, with room for both")
        #expect(pool.dequeue(for: 0, maximum: 99).jobs == [2, 3])
    }

    @Test("failed connection attempts back off, doubling up to the maximum; a success resets the count")
    func backOff() {
        var pool = Self.machine(connections: 1, attempts: 10)
        _ = pool.submit([1], deadline: Self.deadline)
        #expect(Self.describe(pool.connectionFailed(0, permanent: false)) == ["reconnect after 100 ms"])
        #expect(Self.describe(pool.submit([2], deadline: Self.deadline)) == [], "no connection opens during the back-off")
        #expect(Self.describe(pool.reconnectDue()) == ["open 1"])
        #expect(Self.describe(pool.connectionFailed(1, permanent: false)) == ["reconnect after 200 ms"])
        #expect(Self.describe(pool.reconnectDue()) == ["open 2"])
        #expect(Self.describe(pool.connectionFailed(2, permanent: false)) == ["reconnect after 350 ms"], "capped")
        #expect(Self.describe(pool.connectionFailed(2, permanent: false)) == [], "a failure reported twice counts once")
        #expect(Self.describe(pool.reconnectDue()) == ["open 3"])
        _ = pool.connectionReady(3, handle: "c3")
        #expect(Self.describe(pool.connectionFailed(99, permanent: false)) == [], "an unknown connection is ignored")
        #expect(Self.describe(pool.connectionFailed(3, permanent: false)) == [], "a ready connection that fails later is closed, not a failed attempt")
        #expect(Self.describe(pool.connectionClosed(3)) == ["open 4"])
        #expect(Self.describe(pool.connectionFailed(4, permanent: false)) == ["reconnect after 100 ms"], "the ready connection reset the count")
    }

    @Test("when every attempt fails and no connection is up, the queued jobs fail instead of waiting")
    func allConnectionsFailing() {
        var pool = Self.machine(connections: 2, attempts: 2)
        _ = pool.submit([1, 2], deadline: Self.deadline)
        #expect(Self.describe(pool.connectionFailed(0, permanent: false)) == ["reconnect after 100 ms"])
        _ = pool.reconnectDue()
        #expect(Self.describe(pool.connectionFailed(1, permanent: false)) == ["fail unconnectable [1, 2]"])
        #expect(pool.queuedCount == 0)
        #expect(pool.activeJobs == 2, "still counted until their outcomes are delivered")
        #expect(pool.finished(2) == false, "not shutting down")
        #expect(pool.activeJobs == 0)
    }

    @Test("a permanent failure (TLS, credentials) fails the queue at once when no connection is up")
    func permanentFailure() {
        var pool = Self.machine(attempts: 5)
        _ = pool.submit([1], deadline: Self.deadline)
        #expect(Self.describe(pool.connectionFailed(0, permanent: true)) == ["fail unconnectable [1]"])
    }

    @Test("a draining connection takes no more work, and a replacement opens for what is queued")
    func drainingAndReplacement() {
        var pool = Self.machine(connections: 1)
        _ = pool.submit([1], deadline: Self.deadline)
        _ = pool.connectionReady(0, handle: "c0")
        #expect(pool.dequeue(for: 0, maximum: 10).jobs == [1])
        // GOAWAY: connection 0 drains; the new job may not go to it, and a replacement may open
        // even though connection 0 still counts against the maximum until it closes.
        #expect(Self.describe(pool.connectionDraining(0)) == [])
        #expect(Self.describe(pool.submit([2], deadline: Self.deadline)) == ["open 1"])
        #expect(pool.dequeue(for: 0, maximum: 10).jobs == [], "a draining connection gets nothing")
        #expect(Self.describe(pool.connectionClosed(0)) == [])
        _ = pool.connectionReady(1, handle: "c1")
        #expect(pool.dequeue(for: 1, maximum: 10).jobs == [2])
        #expect(pool.connectionCount == 1)
    }

    @Test("a connection that never becomes ready: queued jobs fail at their deadline, saying no connection was ready")
    func neverReady() {
        var pool = Self.machine()
        #expect(Self.describe(pool.submit([1, 2], deadline: Self.now + .seconds(1))) == ["open 0"])
        _ = pool.submit([3], deadline: Self.now + .seconds(5))
        #expect(Self.describe(pool.expire(now: Self.now)) == [], "not yet")
        #expect(Self.describe(pool.expire(now: Self.now + .seconds(1))) == ["fail timed out [1, 2] with 0 ready"])
        #expect(pool.queuedCount == 1)
        _ = pool.connectionReady(0, handle: "c0")
        #expect(pool.dequeue(for: 0, maximum: 0).jobs == [], "a server allowing no streams")
        #expect(Self.describe(pool.expire(now: Self.now + .seconds(5))) == ["fail timed out [3] with 1 ready"])
    }

    @Test("a retry goes to the front of the queue when it is re-sent at once, to the back after a back-off")
    func requeue() {
        var pool = Self.machine(connections: 1)
        _ = pool.submit([1, 2], deadline: Self.deadline)
        _ = pool.connectionReady(0, handle: "c0")
        #expect(pool.dequeue(for: 0, maximum: 1).jobs == [1])
        _ = pool.requeue(1, deadline: Self.deadline, atFront: true)
        _ = pool.requeue(9, deadline: Self.deadline, atFront: false)
        #expect(pool.dequeue(for: 0, maximum: 10).jobs == [1, 2, 9])
        #expect(pool.activeJobs == 2, "requeued jobs were already counted")
    }

    @Test("shutdown refuses new work, waits for active jobs, and closes a connection that becomes ready after")
    func shutdown() {
        var pool = Self.machine()
        #expect(Self.describe(pool.submit([1], deadline: Self.deadline)) == ["open 0"])
        #expect(pool.beginShutdown() == false, "one job is active")
        #expect(pool.submit([2], deadline: Self.deadline) == nil)
        _ = pool.connectionReady(0, handle: "c0")
        #expect(pool.dequeue(for: 0, maximum: 10).jobs == [1])
        #expect(pool.finished(1) == true, "the last job ends the wait")
        #expect(pool.closeAll() == ["c0"])
        // A second connection, opened for work before shutdown, comes up after it closed the others.
        var late = Self.machine()
        _ = late.submit([1], deadline: Self.deadline)
        #expect(late.beginShutdown() == false)
        _ = late.finished(1)
        #expect(late.closeAll() == [])
        #expect(Self.describe(late.connectionReady(0, handle: "late")) == ["close late"])
    }

    @Test("with no work active, shutdown need not wait; with nothing queued, nothing opens")
    func idleShutdown() {
        var pool = Self.machine()
        #expect(pool.beginShutdown() == true)
        #expect(pool.closeAll() == [])
        #expect(pool.connectionCount == 0)
    }
}
