import Foundation
import HeraldCore
@testable import HeraldStore
import Testing

/// The store's `OutcomePlan` carries out each outcome's ``DeliveryDecision`` and nothing else:
/// the row's state, reason string and retry time, and the devices invalidated, follow from the
/// decision, for every outcome, attempt, deadline and cancel.
@Suite("The store's outcome plan carries out the delivery decisions")
struct DeliveryDecisionAgreementTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let settings = RetrySettings(HeraldStore.Configuration(url: .sqlite(path: ":memory:")))

    static let results: [DeliveryOutcome.Result] = {
        let reasons = DeliveryReason.allKnown + [.other("NewReason"), .apns(.unknown("")), .quarantined("x"), .expiredRetrying(last: "Shutdown")]
        var results: [DeliveryOutcome.Result] = [.accepted(receipt: "a1"), .accepted(receipt: nil)] + SkipReason.allCases.map { .skipped($0) }
        for reason in reasons {
            results += [
                .rejected(reason: reason, timestamp: nil), .rejected(reason: reason, timestamp: now.addingTimeInterval(-60)),
                .retry(reason: reason), .failed(reason: reason),
            ]
        }
        return results
    }()

    @Test("every outcome, attempt, deadline and cancel gives the row and invalidation the plan gives")
    func agreement() {
        let tokens = Self.results.indices.map { "token\($0)" }
        for attempt in [1, 2, 4, 9] {
            for deadlineOffset in [0.0, 4.999, 5, 10, 19.999, 20, 3600] {
                for cancelled in [false, true] {
                    let deadline = Self.now.addingTimeInterval(deadlineOffset)
                    let batch = WorkBatch(
                        notification: QueuedNotification(
                            id: "n", app: "app", payload: Array("{}".utf8), pushType: .alert, badge: .none, deadline: deadline
                        ),
                        items: tokens.map { WorkItem(token: $0, badge: nil, attempt: attempt) }, isResend: false, owner: "w",
                        source: .deliveries(tokens.indices.map(Int64.init))
                    )
                    let outcomes = zip(tokens, Self.results).map { DeliveryOutcome(token: $0, result: $1) }
                    let plan = OutcomePlan(outcomes: outcomes, of: batch, cancelled: cancelled, settings: Self.settings, now: Self.now, random: { 0 })
                    #expect(plan.rows.count == outcomes.count)
                    let invalidations = Dictionary(plan.invalidations.map { ($0.token, $0) }, uniquingKeysWith: { first, _ in first })
                    for (row, outcome) in zip(plan.rows, outcomes) {
                        let decision = DeliveryDecision.decide(
                            outcome: outcome.result, attempt: attempt, deadline: deadline, cancelled: cancelled, now: Self.now,
                            settings: Self.settings, random: 0
                        )
                        let context = "\(outcome.result), attempt \(attempt), deadline +\(deadlineOffset), cancelled \(cancelled): \(decision)"
                        #expect(row.token == outcome.token)
                        #expect(row.reason == decision.reason?.description, "\(context)")
                        let invalidation = invalidations[outcome.token]
                        switch decision {
                        case .accept(let receipt, let uniqueID):
                            #expect(row.state == .accepted && row.receipt == receipt && row.uniqueID == uniqueID, "\(context)")
                        case .retry(let at, _):
                            #expect(row.state == .pending && row.nextAttemptAt == at.milliseconds, "\(context)")
                        case .retireDevice(let reason, let since):
                            #expect(row.state == .rejected, "\(context)")
                            #expect(invalidation == Invalidation(token: outcome.token, reason: reason.description, timestamp: since), "\(context)")
                            #expect(Invalidation.status(for: reason.description) == .unregistered)
                        case .invalidateDevice(let reason):
                            #expect(row.state == .rejected, "\(context)")
                            #expect(invalidation?.reason == reason.description, "\(context)")
                            #expect(Invalidation.status(for: reason.description) == .invalid)
                        case .reject:
                            #expect(row.state == .rejected && invalidation == nil, "\(context)")
                        case .fail:
                            #expect(row.state == .failed && invalidation == nil, "\(context)")
                        case .skip(let reason):
                            #expect(row.state == DeliveryState(reason) && row.state.skip == reason && invalidation == nil, "\(context)")
                        }
                    }
                }
            }
        }
    }
}
