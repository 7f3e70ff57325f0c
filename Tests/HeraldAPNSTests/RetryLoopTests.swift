import HeraldTransport
import Synchronization
import Testing

/// The one retry loop the Web Push and FCM clients share: it keeps count and waits; when to stop
/// is each platform's decision.
@Suite("Retry loop")
struct RetryLoopTests {
    struct Refused: Error, Equatable {
        var attempts: Int
    }

    /// How many attempts were made, shared with a task.
    final class Count: Sendable {
        private let value = Mutex(0)
        func add() { value.withLock { $0 += 1 } }
        var current: Int { value.withLock { $0 } }
    }

    @Test("attempts are numbered after the earlier ones; it runs again while told to, and ends with what the attempt decided")
    func counts() async {
        let seen = Mutex<[Int]>([])
        let result: Result<String, Refused> = await retrying(after: 2, cancelled: { Refused(attempts: $0) }) { number in
            seen.withLock { $0.append(number) }
            return number < 5 ? .retry(after: .zero) : .done(.success("answered on \(number)"))
        }
        #expect(result == .success("answered on 5"))
        #expect(seen.withLock { $0 } == [3, 4, 5])
        let failed: Result<String, Refused> = await retrying(after: 0, cancelled: { Refused(attempts: $0) }) { .done(.failure(Refused(attempts: $0 * 10))) }
        #expect(failed == .failure(Refused(attempts: 10)), "a failure decided by the attempt is returned as it is, after one attempt")
    }

    @Test("a wait that is cancelled ends the loop with the attempts made so far; the first delay is waited before any attempt")
    func cancelled() async {
        let attempts = Count()
        let waiting = Task {
            await retrying(after: 1, delay: .seconds(60), cancelled: { Refused(attempts: $0) }) { _ -> RetryStep<String, Refused> in
                attempts.add()
                return .done(.success("sent"))
            }
        }
        waiting.cancel()
        #expect(await waiting.value == .failure(Refused(attempts: 1)), "cancelled in the first delay: nothing sent")
        #expect(attempts.current == 0)

        let looping = Task {
            await retrying(after: 0, cancelled: { Refused(attempts: $0) }) { _ -> RetryStep<String, Refused> in
                attempts.add()
                return .retry(after: .seconds(60))
            }
        }
        // Bounded: the first attempt comes at once; the loop then waits 60 s, which the cancel ends.
        for _ in 0..<500 where attempts.current == 0 { try? await Task.sleep(for: .milliseconds(10)) }
        looping.cancel()
        #expect(await looping.value == .failure(Refused(attempts: 1)))
        #expect(attempts.current == 1)
    }
}
