import HeraldStore
import Testing

@testable import HeraldGateway

/// A batch's outcomes as they come in: each device's once, `missing` for any that never comes.
@Suite("Outcome collector")
struct OutcomeCollectorTests {
    static let missing = DeliveryOutcome.Result.retry(reason: .gateway(.shutdown))

    @Test("outcomes come back in the tokens' order whatever order they arrive in, and wait ends with the last")
    func allIn() async {
        let collector = OutcomeCollector(tokens: ["a", "b", "c"], missing: Self.missing)
        collector.record(.failed(reason: .gateway(.payloadInvalid)), at: 2)
        collector.record(.accepted(receipt: "1"), at: 0)
        collector.record(.accepted(receipt: nil), at: 1)
        await collector.wait()  // returns: all three are in
        #expect(
            collector.take() == [
                DeliveryOutcome(token: "a", result: .accepted(receipt: "1")), DeliveryOutcome(token: "b", result: .accepted(receipt: nil)),
                DeliveryOutcome(token: "c", result: .failed(reason: .gateway(.payloadInvalid))),
            ])
    }

    @Test("a second outcome for a device, or one out of range, is ignored; one not in by stop() is missing")
    func duplicatesAndStop() async {
        let collector = OutcomeCollector(tokens: ["a", "b"], missing: Self.missing)
        collector.record(.accepted(receipt: nil), at: 0)
        collector.record(.failed(reason: .gateway(.expired)), at: 0)
        collector.record(.accepted(receipt: nil), at: 2)
        collector.record(.accepted(receipt: nil), at: -1)
        collector.stop()
        await collector.wait()  // returns: stopped, though "b" never came
        #expect(collector.take() == [DeliveryOutcome(token: "a", result: .accepted(receipt: nil)), DeliveryOutcome(token: "b", result: Self.missing)])
    }

    @Test("take() hands the outcomes over: one that comes after it counts nowhere")
    func lateOutcome() async {
        let collector = OutcomeCollector(tokens: ["a"], missing: Self.missing)
        collector.stop()
        #expect(collector.take() == [DeliveryOutcome(token: "a", result: Self.missing)])
        collector.record(.accepted(receipt: nil), at: 0)
        #expect(collector.take().isEmpty)
    }

    @Test("a wait on a batch whose outcomes are all in already returns at once, as does one for no devices")
    func alreadyDone() async {
        let none = OutcomeCollector(tokens: [], missing: Self.missing)
        await none.wait()
        #expect(none.take().isEmpty)
        let one = OutcomeCollector(tokens: ["a"], missing: Self.missing)
        one.record(.accepted(receipt: nil), at: 0)
        await one.wait()
        #expect(one.take() == [DeliveryOutcome(token: "a", result: .accepted(receipt: nil))])
    }
}
