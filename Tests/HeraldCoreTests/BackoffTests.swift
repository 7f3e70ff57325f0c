import HeraldCore
import Testing

@Suite("Back-off")
struct BackoffTests {
    let backoff = Backoff(initial: .seconds(5), maximum: .seconds(600), jitter: 0.2)

    @Test("without jitter the delay doubles from the initial one up to the maximum, and stays there")
    func doubling() {
        let exact = Backoff(initial: .seconds(5), maximum: .seconds(600))
        let delays = (1...10).map { exact.delay(afterAttempt: $0, random: 0.7) }
        #expect(delays == [5, 10, 20, 40, 80, 160, 320, 600, 600, 600].map { Duration.seconds($0) })
    }

    @Test("random 0 is the undisturbed delay; jitter takes at most its fraction off")
    func jitterRange() {
        for attempt in 1...12 {
            let ceiling = backoff.delay(afterAttempt: attempt, random: 0)
            #expect(ceiling == min(.seconds(5) * (1 << (attempt - 1)), .seconds(600)))
            for random in stride(from: 0.0, to: 1.0, by: 0.05) {
                let delay = backoff.delay(afterAttempt: attempt, random: random)
                #expect(delay <= ceiling && delay > ceiling * 0.8 - .milliseconds(1), "attempt \(attempt), random \(random)")
            }
        }
        #expect(backoff.delay(afterAttempt: 1, random: 0.5) == .milliseconds(4500))
        #expect(backoff.delay(afterAttempt: 30, random: 0.5) == .seconds(540))
    }

    @Test("out-of-range inputs are clamped: attempts below 1, random and jitter outside 0...1, NaN")
    func clamping() {
        #expect(backoff.delay(afterAttempt: 0, random: 0) == .seconds(5))
        #expect(backoff.delay(afterAttempt: -7, random: 0) == .seconds(5))
        #expect(backoff.delay(afterAttempt: Int.min, random: 0) == .seconds(5))
        #expect(backoff.delay(afterAttempt: 1, random: -1) == .seconds(5))
        #expect(backoff.delay(afterAttempt: 1, random: 7) == .seconds(4))
        #expect(backoff.delay(afterAttempt: 1, random: .nan) == .seconds(5))
        #expect(Backoff(initial: .seconds(1), maximum: .seconds(1), jitter: 3).jitter == 1)
        #expect(Backoff(initial: .seconds(1), maximum: .seconds(1), jitter: -3).jitter == 0)
        #expect(Backoff(initial: .seconds(1), maximum: .seconds(1), jitter: .nan).jitter == 0)
        var edited = Backoff(initial: .seconds(1), maximum: .seconds(1))
        edited.jitter = 5  // set past the initialiser: still at most the whole delay
        #expect(edited.delay(afterAttempt: 1, random: 0.999) >= .zero)
    }

    @Test("a maximum below the initial delay wins; negative durations count as zero")
    func bounds() {
        #expect(Backoff(initial: .seconds(10), maximum: .seconds(3)).delay(afterAttempt: 1, random: 0) == .seconds(3))
        #expect(Backoff(initial: .seconds(-1), maximum: .seconds(3)).delay(afterAttempt: 5, random: 0) == .zero)
        #expect(Backoff(initial: .seconds(1), maximum: .seconds(-3)).delay(afterAttempt: 5, random: 0) == .zero)
        #expect(Backoff(initial: .zero, maximum: .seconds(3)).delay(afterAttempt: .max, random: 0) == .zero)
    }

    @Test("no attempt number overflows, up to Int.max, whatever the durations")
    func overflow() {
        #expect(backoff.delay(afterAttempt: .max, random: 0) == .seconds(600))
        #expect(backoff.delay(afterAttempt: 64, random: 0) == .seconds(600))
        #expect(backoff.delay(afterAttempt: 63, random: 0) == .seconds(600))
        let tiny = Backoff(initial: .nanoseconds(1), maximum: .seconds(Int64.max))
        #expect(tiny.delay(afterAttempt: 63, random: 0) == .nanoseconds(1) * (1 << 62))
        #expect(tiny.delay(afterAttempt: 64, random: 0) == .seconds(Int64.max))
        #expect(tiny.delay(afterAttempt: .max, random: 0.5) <= .seconds(Int64.max))
        let huge = Backoff(initial: .seconds(Int64.max), maximum: .seconds(Int64.max), jitter: 1)
        #expect(huge.delay(afterAttempt: 2, random: 0) == .seconds(Int64.max))
        #expect(huge.delay(afterAttempt: .max, random: 0.999_999) >= .zero)
    }
}
