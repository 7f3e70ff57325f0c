@testable import HeraldStore
import Testing

/// The decisions behind a PostgreSQL outage, as plain values: when the monitor asks the
/// database, when operations are refused at once (a 503 in milliseconds, not after a 5 s wait
/// for a pool that cannot connect), and when the pool is made anew.
@Suite("PostgreSQL reachability")
struct PostgresReachabilityTests {
    typealias Reachability = PostgresReachability
    let start = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test("while the database answers, it is asked only when something suggests otherwise, at most every 250 ms")
    func askedOnSuspicion() {
        var reachability = Reachability()
        #expect(reachability.next(at: at(0)) == .wait(Reachability.probeInterval), "nothing to ask")
        #expect(reachability.refusal(at: at(0)) == nil)
        reachability.want()
        #expect(reachability.next(at: at(0)) == .probe(1))
        #expect(reachability.next(at: at(1)) == .wait(Reachability.probeInterval), "one probe at a time")
        #expect(reachability.probeEnded(.answered(schema: 20), at: at(10)) == Reachability.Action.none)
        reachability.want()
        #expect(reachability.next(at: at(110)) == .wait(.milliseconds(150)), "not again within 250 ms")
        #expect(reachability.next(at: at(260)) == .probe(2))
    }

    @Test("an unanswered probe fails the operations under way and refuses new ones; the database is then asked every 250 ms")
    func outage() {
        var reachability = Reachability()
        reachability.want()
        #expect(reachability.next(at: at(0)) == .probe(1))
        #expect(reachability.probeEnded(.unanswered("connection refused"), at: at(5)) == .failOperations(reason: "connection refused"))
        #expect(reachability.refusal(at: at(1005))?.reason == "connection refused")
        #expect(reachability.refusal(at: at(1005))?.for == .seconds(1))
        #expect(reachability.next(at: at(100)) == .wait(.milliseconds(155)))
        #expect(reachability.next(at: at(255)) == .probe(2), "asked again without anyone wanting it")
        #expect(reachability.probeEnded(.unanswered("no answer within 0.75 seconds"), at: at(1005)) == Reachability.Action.none, "operations were failed once")
        #expect(reachability.refusal(at: at(1005))?.reason == "no answer within 0.75 seconds")
        #expect(reachability.readiness() == .refused("no answer within 0.75 seconds"), "readiness is answered at once")
    }

    @Test("after a short outage operations resume on the same pool; after a long one, on a new pool")
    func recovery() {
        var short = Reachability()
        short.want()
        _ = short.next(at: at(0))
        _ = short.probeEnded(.unanswered("connection refused"), at: at(0))
        _ = short.next(at: at(1000))
        #expect(short.probeEnded(.answered(schema: 20), at: at(1000)) == .resumed)
        #expect(short.refusal(at: at(1000)) == nil)

        var long = Reachability()
        long.want()
        _ = long.next(at: at(0))
        _ = long.probeEnded(.unanswered("connection refused"), at: at(0))
        _ = long.next(at: at(6000))
        #expect(long.probeEnded(.answered(schema: 20), at: at(6000)) == .replacePool)
        #expect(long.refusal(at: at(6000)) != nil, "refused until the new pool is in place")
        long.poolReplaced()
        #expect(long.refusal(at: at(6001)) == nil)
        #expect(long.state == .reachable)
    }

    @Test("readiness: answered by a probe started after the check began, never by an older answer")
    func readiness() {
        var reachability = Reachability()
        #expect(reachability.readiness() == .ask(after: 0))
        #expect(reachability.next(at: at(0)) == .probe(1))
        _ = reachability.probeEnded(.answered(schema: 20), at: at(10))
        #expect(reachability.readiness() == .ask(after: 1), "a probe ended 10 ms ago does not answer for now")
        #expect(reachability.next(at: at(20)) == .wait(.milliseconds(40)), "for a readiness check, probes may come 50 ms apart")
        #expect(reachability.next(at: at(60)) == .probe(2))
    }
}
