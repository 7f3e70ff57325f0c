import Foundation
import HeraldCore
import HeraldStore
import Testing

/// What the queue does with a device after each kind of outcome (apns-spec §1.7), as plain values.
@Suite("Delivery decisions")
struct DeliveryDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let deadline = now.addingTimeInterval(3600)
    /// The store's defaults: 5 s, doubling up to 10 minutes, no jitter.
    static let settings = RetrySettings(HeraldStore.Configuration(url: .sqlite(path: ":memory:")))

    func decide(
        _ outcome: DeliveryOutcome.Result, attempt: Int = 1, deadline: Date = Self.deadline, cancelled: Bool = false,
        settings: RetrySettings = Self.settings, random: Double = 0
    ) -> DeliveryDecision {
        DeliveryDecision.decide(
            outcome: outcome, attempt: attempt, deadline: deadline, cancelled: cancelled, now: Self.now, settings: settings, random: random
        )
    }

    enum Rejection: Sendable {
        case retire, invalidate, reject
    }

    /// Every APNs reason Herald knows, and what a rejection for it does to the device: only the four
    /// reasons about the token itself touch the device (§1.7's "Retry? No" rows for tokens).
    static let rejections: [(String, Rejection)] = [
        ("BadCollapseId", .reject), ("BadDeviceToken", .invalidate), ("BadExpirationDate", .reject), ("BadMessageId", .reject),
        ("BadPriority", .reject), ("BadTopic", .reject), ("DeviceTokenNotForTopic", .invalidate), ("DuplicateHeaders", .reject),
        ("IdleTimeout", .reject), ("InvalidPushType", .reject), ("MissingDeviceToken", .reject), ("MissingTopic", .reject),
        ("PayloadEmpty", .reject), ("TopicDisallowed", .reject), ("BadCertificate", .reject), ("BadCertificateEnvironment", .reject),
        ("ExpiredProviderToken", .reject), ("Forbidden", .reject), ("InvalidProviderToken", .reject), ("MissingProviderToken", .reject),
        ("UnrelatedKeyIdInToken", .reject), ("BadEnvironmentKeyIdInToken", .reject), ("BadPath", .reject), ("MethodNotAllowed", .reject),
        ("ExpiredToken", .retire), ("Unregistered", .retire), ("PayloadTooLarge", .reject), ("TooManyProviderTokenUpdates", .reject),
        ("TooManyRequests", .reject), ("InternalServerError", .reject), ("ServiceUnavailable", .reject), ("Shutdown", .reject),
        ("FeatureNotEnabled", .reject), ("MissingChannelId", .reject), ("BadChannelId", .reject), ("ChannelNotRegistered", .reject),
        ("BadRequestParams", .reject), ("BadRequestPayload", .reject), ("MissingPushType", .reject), ("CannotCreateChannelConfig", .reject),
        ("TopicMismatch", .reject),
    ]

    @Test("the table names every APNs reason Herald knows")
    func tableIsComplete() {
        #expect(Set(Self.rejections.map(\.0)) == Set(APNSReason.allKnown.map(\.rawValue)))
        #expect(Self.rejections.count == APNSReason.allKnown.count)
    }

    @Test("a rejection retires, invalidates or only rejects, by its APNs reason", arguments: Self.rejections)
    func rejection(name: String, expected: Rejection) {
        let reason = DeliveryReason.apns(APNSReason(rawValue: name))
        let seen = Self.now.addingTimeInterval(-86_400)
        for cancelled in [false, true] {
            let decision = decide(.rejected(reason: reason, timestamp: seen), cancelled: cancelled)
            switch expected {
            case .retire: #expect(decision == .retireDevice(reason: reason, since: seen), "\(name)")
            case .invalidate: #expect(decision == .invalidateDevice(reason: reason), "\(name)")
            case .reject: #expect(decision == .reject(reason: reason), "\(name)")
            }
            #expect(decision.reason?.description == name)
        }
    }

    @Test("a 410 without a timestamp counts from when APNs answered")
    func retireWithoutTimestamp() {
        #expect(decide(.rejected(reason: "Unregistered", timestamp: nil)) == .retireDevice(reason: "Unregistered", since: Self.now))
        #expect(decide(.rejected(reason: "ExpiredToken", timestamp: nil)) == .retireDevice(reason: "ExpiredToken", since: Self.now))
    }

    @Test("a rejection Herald does not know is only a rejection, and keeps its string")
    func unknownRejection() {
        for reason: DeliveryReason in [.apns(.unknown("NewReason")), .other("NewReason"), .apns(.unknown(""))] {
            #expect(decide(.rejected(reason: reason, timestamp: nil)) == .reject(reason: reason))
        }
        // Typed any way, the token reasons are recognised by their string.
        #expect(decide(.rejected(reason: .other("BadDeviceToken"), timestamp: nil)) == .invalidateDevice(reason: "BadDeviceToken"))
    }

    /// Every reason a retry or failure can carry: APNs's, the gateway's, and unknown ones.
    static let everyReason: [DeliveryReason] = DeliveryReason.allKnown + [
        .apns(.unknown("NewReason")), .other("SomethingElse"), .quarantined("badge -1 is outside 0...99999"),
        .expiredRetrying(last: "ServiceUnavailable"),
    ]

    @Test("a retry comes back after the back-off, with its reason", arguments: Self.everyReason)
    func retry(reason: DeliveryReason) {
        #expect(decide(.retry(reason: reason)) == .retry(at: Self.now.addingTimeInterval(5), reason: reason))
        #expect(decide(.retry(reason: reason), attempt: 3) == .retry(at: Self.now.addingTimeInterval(20), reason: reason))
    }

    @Test("a retry of a cancelled notification fails as Cancelled, whatever its reason", arguments: Self.everyReason)
    func cancelled(reason: DeliveryReason) {
        let decision = decide(.retry(reason: reason), cancelled: true)
        #expect(decision == .fail(reason: .gateway(.cancelled)))
        #expect(decision.reason?.description == "Cancelled")
    }

    @Test("a retry that would come at or after the deadline fails as Expired (last: …)", arguments: Self.everyReason)
    func expiredRetry(reason: DeliveryReason) {
        let atDeadline = decide(.retry(reason: reason), deadline: Self.now.addingTimeInterval(5))
        #expect(atDeadline == .fail(reason: .expiredRetrying(last: reason)))
        #expect(atDeadline.reason?.description == "Expired (last: \(reason.description))")
        #expect(decide(.retry(reason: reason), deadline: Self.now) == .fail(reason: .expiredRetrying(last: reason)))
        let justBefore = Self.now.addingTimeInterval(5.001)
        #expect(decide(.retry(reason: reason), deadline: justBefore) == .retry(at: Self.now.addingTimeInterval(5), reason: reason))
        // Cancelled wins over expired, as the store has always recorded it.
        #expect(decide(.retry(reason: reason), deadline: Self.now, cancelled: true) == .fail(reason: "Cancelled"))
    }

    @Test("a failure stays a failure with its reason, cancelled or not", arguments: Self.everyReason)
    func failure(reason: DeliveryReason) {
        #expect(decide(.failed(reason: reason)) == .fail(reason: reason))
        #expect(decide(.failed(reason: reason), deadline: Self.now, cancelled: true) == .fail(reason: reason))
    }

    @Test("an acceptance is accepted with its apns-id, even after a cancel or past the deadline")
    func accept() {
        #expect(decide(.accepted(receipt: "a1")) == .accept(receipt: "a1"))
        #expect(decide(.accepted(receipt: nil), deadline: Self.now, cancelled: true) == .accept(receipt: nil))
    }

    @Test("the gateway's own reasons: the exact strings the store keeps")
    func gatewayStrings() {
        #expect(decide(.retry(reason: .gateway(.unknownApp)), deadline: Self.now).reason?.description == "Expired (last: UnknownApp)")
        #expect(decide(.retry(reason: .gateway(.shutdown)), deadline: Self.now).reason?.description == "Expired (last: shutdown)")
        #expect(decide(.retry(reason: .gateway(.connectionFailed)), deadline: Self.now).reason?.description == "Expired (last: connectionFailed)")
        #expect(decide(.failed(reason: .gateway(.payloadInvalid))).reason?.description == "PayloadInvalid")
        #expect(decide(.failed(reason: .gateway(.expired))).reason?.description == "Expired")
    }

    @Test("retries back off by attempt up to the maximum, and never overflow")
    func backoffByAttempt() {
        let far = Self.now.addingTimeInterval(365 * 86_400)
        let delays = [1, 2, 3, 4, 5, 6, 7, 8, 9, 50, Int.max].map { attempt -> TimeInterval in
            guard case .retry(let at, _) = decide(.retry(reason: "ServiceUnavailable"), attempt: attempt, deadline: far) else { return -1 }
            return at.timeIntervalSince(Self.now)
        }
        #expect(delays == [5, 10, 20, 40, 80, 160, 320, 600, 600, 600, 600])
        // An attempt number the store never writes (0) counts as the first.
        #expect(decide(.retry(reason: "ServiceUnavailable"), attempt: 0) == .retry(at: Self.now.addingTimeInterval(5), reason: "ServiceUnavailable"))
    }

    @Test("jitter only brings a retry forward, by at most its fraction")
    func jitter() {
        let settings = RetrySettings(backoff: Backoff(initial: .seconds(10), maximum: .seconds(100), jitter: 0.5))
        for random in stride(from: 0.0, to: 1.0, by: 0.125) {
            guard case .retry(let at, _) = decide(.retry(reason: "InternalServerError"), settings: settings, random: random) else {
                Issue.record("random \(random) must retry")
                continue
            }
            #expect(at.timeIntervalSince(Self.now) == 10 * (1 - 0.5 * random))
        }
        // Jitter can bring a retry back before the deadline that its full delay would miss.
        let deadline = Self.now.addingTimeInterval(8)
        #expect(decide(.retry(reason: "InternalServerError"), deadline: deadline, settings: settings, random: 0) == .fail(reason: "Expired (last: InternalServerError)"))
        #expect(decide(.retry(reason: "InternalServerError"), deadline: deadline, settings: settings, random: 0.5) == .retry(at: Self.now.addingTimeInterval(7.5), reason: "InternalServerError"))
    }
}
