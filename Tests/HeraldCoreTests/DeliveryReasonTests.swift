import HeraldCore
import Testing

@Suite("Delivery reasons")
struct DeliveryReasonTests {
    /// Every string the gateway and the store have written as a reason, exactly as they wrote it:
    /// stored rows and API answers must read the same after reasons became typed.
    static let gatewayStrings: [(String, DeliveryReason)] = [
        ("UnknownApp", .gateway(.unknownApp)),
        ("PayloadInvalid", .gateway(.payloadInvalid)),
        ("Expired", .gateway(.expired)),
        ("Cancelled", .gateway(.cancelled)),
        ("shutdown", .gateway(.shutdown)),
        ("connectionFailed", .gateway(.connectionFailed)),
        ("tlsFailed", .gateway(.tlsFailed)),
        ("connectionLost", .gateway(.connectionLost)),
        ("timedOut", .gateway(.timedOut)),
        ("expired", .gateway(.clientExpired)),
        ("invalidCredentials", .gateway(.invalidCredentials)),
        ("invalidConfiguration", .gateway(.invalidConfiguration)),
        ("protocolError", .gateway(.protocolError)),
        ("Expired (last: ServiceUnavailable)", .expiredRetrying(last: .apns(.serviceUnavailable))),
        ("Expired (last: UnknownApp)", .expiredRetrying(last: .gateway(.unknownApp))),
        ("Expired (last: connectionFailed)", .expiredRetrying(last: .gateway(.connectionFailed))),
        ("Quarantined: notification 0190abcd is done", .quarantined("notification 0190abcd is done")),
        ("Quarantined: badge -1 is outside 0...99999", .quarantined("badge -1 is outside 0...99999")),
    ]

    @Test("the gateway's strings parse to their reasons and print back unchanged")
    func gatewayStringsRoundTrip() {
        for (text, reason) in Self.gatewayStrings {
            let parsed = DeliveryReason(text)
            #expect(parsed == reason, "\(text)")
            #expect(parsed.description == text)
            #expect(reason.description == text)
        }
    }

    @Test("every APNs reason is its APNs string", arguments: APNSReason.allKnown)
    func apnsReason(reason: APNSReason) {
        let parsed = DeliveryReason(reason.rawValue)
        guard case .apns(let inner) = parsed else {
            Issue.record("\(reason.rawValue) parsed as \(parsed)")
            return
        }
        #expect(inner == reason)
        #expect(parsed.description == reason.rawValue)
        #expect(parsed.apnsReason == reason)
    }

    @Test("the known reasons are APNs's, the gateway's, Web Push's and FCM's, each string once")
    func allKnown() {
        // Web Push's and FCM's 429, 500, 503 and 413 keep APNs's strings (what the store has
        // always held for them): listed once.
        let shared: Set<String> = ["TooManyRequests", "InternalServerError", "ServiceUnavailable", "PayloadTooLarge"]
        let platforms = DeliveryReason.WebPush.allCases.map(\.rawValue) + DeliveryReason.FCM.allCases.map(\.rawValue) + DeliveryReason.HMS.allCases.map(\.rawValue)
        #expect(platforms.filter(shared.contains).count == 10)
        #expect(
            DeliveryReason.allKnown.count
                == APNSReason.allKnown.count + DeliveryReason.Gateway.allCases.count + platforms.count - 10)
        #expect(Set(DeliveryReason.allKnown.map(\.description)).count == DeliveryReason.allKnown.count)
        for reason in DeliveryReason.allKnown {
            #expect(DeliveryReason(reason.description) == reason)
            #expect(reason.code == reason.description, "a known reason is its own code")
        }
    }

    @Test("a platform's reason is its own case, and the string the store has always kept for it")
    func platformReasons() {
        #expect(DeliveryReason.webPush(.tooManyRequests).description == "TooManyRequests")
        #expect(DeliveryReason.fcm(.quotaExceeded).description == "TooManyRequests")
        #expect(DeliveryReason.fcm(.quotaExceeded) == .apns(.tooManyRequests), "equal exactly when their strings are")
        #expect(DeliveryReason.webPush(.tooManyRequests).code == "TooManyRequests")
        #expect(DeliveryReason("SubscriptionGone") == .webPush(.subscriptionGone))
        #expect(DeliveryReason("FCMUnregistered").code == "FCMUnregistered")
        #expect(DeliveryReason.fcm(.unregistered).apnsReason == nil)
    }

    @Test("each platform's reasons say what a rejection does to the device, also when made from their string")
    func deviceFates() {
        let retiring: [DeliveryReason] = [.apns(.unregistered), .apns(.expiredToken), .webPush(.subscriptionGone), .fcm(.unregistered), .hms(.invalidToken), .gateway(.stale)]
        let invalidating: [DeliveryReason] = [.apns(.badDeviceToken), .apns(.deviceTokenNotForTopic), .fcm(.invalidToken), .fcm(.senderIdMismatch)]
        for reason in retiring {
            #expect(reason.deviceFate == .unregistered, "\(reason)")
            #expect(DeliveryReason.other(reason.description).deviceFate == .unregistered, "\(reason) from its string")
        }
        for reason in invalidating { #expect(reason.deviceFate == .invalid, "\(reason)") }
        let others = DeliveryReason.allKnown.filter { !(retiring + invalidating).contains($0) }
        #expect(others.allSatisfy { $0.deviceFate == nil }, "\(others.filter { $0.deviceFate != nil })")
        #expect(DeliveryReason.expiredRetrying(last: .apns(.unregistered)).deviceFate == nil, "an expiry ends the delivery, not the device")
    }

    @Test("strings Herald does not know are kept as they are", arguments: [
        "", "SomethingNew", "shutdown ", "Shutdown!", "BadEnvironmentKeyInToken", "Expired (last: ", "Expired (last: X",
        "Quarantined:x", "connection failed", "ünïcödé \u{1F4A5}",
    ])
    func unknownStrings(text: String) {
        let reason = DeliveryReason(text)
        #expect(reason.description == text)
        #expect(reason == .other(text))
        #expect(reason.code == "other")
        #expect(reason.apnsReason == nil)
    }

    @Test("a retry that expired keeps its last reason, whatever it was")
    func expiredRetrying() {
        let unknown = DeliveryReason("Expired (last: NewReason)")
        #expect(unknown == .expiredRetrying(last: .other("NewReason")))
        #expect(unknown.code == "Expired")
        #expect(DeliveryReason("Expired (last: )") == .expiredRetrying(last: .other("")))
        #expect(DeliveryReason("Expired (last: Expired (last: Shutdown))") == .expiredRetrying(last: .expiredRetrying(last: .apns(.shutdown))))
        #expect(DeliveryReason.quarantined("x").code == "Quarantined")
    }

    @Test("nesting deeper than a few levels stays text inside, and still prints back unchanged")
    func deepNesting() {
        let depth = 10_000
        let text = String(repeating: "Expired (last: ", count: depth) + "Shutdown" + String(repeating: ")", count: depth)
        let reason = DeliveryReason(text)
        #expect(reason.description == text)
        #expect(reason.code == "Expired")
    }

    @Test("equal exactly when the strings are, however the reason was made")
    func equality() {
        #expect(DeliveryReason.other("Unregistered") == .apns(.unregistered))
        #expect(DeliveryReason.apns(.unknown("UnknownApp")) == .gateway(.unknownApp))
        #expect(DeliveryReason.apns(.unknown("X")) == .other("X"))
        #expect(Set<DeliveryReason>([.other("Unregistered"), .apns(.unregistered), "Unregistered"]).count == 1)
        #expect(DeliveryReason.other("Unregistered").apnsReason == .unregistered)
        #expect(DeliveryReason.other("Unregistered").code == "Unregistered")
        #expect(DeliveryReason.apns(.shutdown) != .gateway(.shutdown), "APNs's Shutdown is not the gateway's shutdown")
        #expect(DeliveryReason.gateway(.expired) != .gateway(.clientExpired))
    }

    @Test("a string literal is a reason")
    func literal() {
        let reason: DeliveryReason = "TooManyRequests"
        #expect(reason == .apns(.tooManyRequests))
        let gateway: DeliveryReason = "UnknownApp"
        #expect(gateway == .gateway(.unknownApp))
        #expect(DeliveryReason("Cancelled" as String) == .gateway(.cancelled))
    }
}
