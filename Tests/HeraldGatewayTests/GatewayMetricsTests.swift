import Foundation
import HeraldCore
import HeraldAPNSMock
import HeraldStore
import Testing

@testable import HeraldGateway

/// The delivery counters' reason labels: one per known reason, a bounded set whatever comes in.
@Suite("Gateway metrics")
struct GatewayMetricsTests {
    @Test("every known reason gets a label of its own: its string, never other")
    func knownReasons() {
        let labels = DeliveryReason.allKnown.map(GatewayMetrics.label)
        for (reason, label) in zip(DeliveryReason.allKnown, labels) {
            #expect(label == reason.description, "\(reason)")
            #expect(label != "other", "\(reason)")
        }
        #expect(Set(labels).count == DeliveryReason.allKnown.count, "no two known reasons share a label")
    }

    @Test("the labels the gateway has always given stay the same")
    func stableLabels() {
        let cases: [(DeliveryReason, String)] = [
            ("Unregistered", "Unregistered"), ("ServiceUnavailable", "ServiceUnavailable"), ("UnknownApp", "UnknownApp"),
            ("shutdown", "shutdown"), ("connectionFailed", "connectionFailed"), ("Expired", "Expired"), ("expired", "expired"),
            ("Expired (last: ServiceUnavailable)", "Expired"), ("Cancelled", "Cancelled"), ("protocolError", "protocolError"),
            ("NotAReason", "other"), ("", "other"), (.apns(.unknown("BrandNew")), "other"),
        ]
        for (reason, label) in cases {
            #expect(GatewayMetrics.label(reason) == label, "\(reason)")
        }
    }

    @Test("reasons Herald does not know share one label, so the label set stays bounded")
    func bounded() {
        let strange = (0..<500).map { DeliveryReason.other("reason-\($0)") } + (0..<500).map { DeliveryReason.apns(.unknown("apns-\($0)")) }
        #expect(Set(strange.map(GatewayMetrics.label)) == ["other"])
        #expect(GatewayMetrics.label(.quarantined("badge -1 is outside 0...99999")) == "Quarantined")
    }

    @Test("recorded outcomes are counted under their outcome and reason label")
    func exposition() {
        let metrics = GatewayMetrics(registry: .init())
        let outcomes: [DeliveryOutcome] = [
            DeliveryOutcome(token: "a", result: .accepted(receipt: nil)),
            DeliveryOutcome(token: "b", result: .rejected(reason: .apns(.unregistered), timestamp: nil)),
            DeliveryOutcome(token: "c", result: .retry(reason: .gateway(.unknownApp))),
            DeliveryOutcome(token: "d", result: .retry(reason: .gateway(.unknownApp))),
            DeliveryOutcome(token: "e", result: .failed(reason: .gateway(.payloadInvalid))),
            DeliveryOutcome(token: "f", result: .rejected(reason: "SomethingNew", timestamp: nil)),
            DeliveryOutcome(token: "wp_abcdefghijklmnopqrstuvwxyz234567", result: .accepted(receipt: nil)),
            DeliveryOutcome(token: "wp_abcdefghijklmnopqrstuvwxyz234572", result: .rejected(reason: .webPush(.subscriptionGone), timestamp: nil)),
        ]
        // Each device's platform as the store gave it with the batch (not read from its ID).
        let browsers = ["wp_abcdefghijklmnopqrstuvwxyz234567", "wp_abcdefghijklmnopqrstuvwxyz234572", "f"]
        metrics.recordOutcomes(app: "shop", outcomes, platforms: Dictionary(uniqueKeysWithValues: browsers.map { ($0, .webpush) }), duration: .milliseconds(3))
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        for line in [
            #"herald_deliveries_total{app="shop",platform="apns",outcome="accepted",reason=""} 1"#,
            #"herald_deliveries_total{app="shop",platform="apns",outcome="rejected",reason="Unregistered"} 1"#,
            #"herald_deliveries_total{app="shop",platform="apns",outcome="retry",reason="UnknownApp"} 2"#,
            #"herald_deliveries_total{app="shop",platform="apns",outcome="failed",reason="PayloadInvalid"} 1"#,
            #"herald_deliveries_total{app="shop",platform="webpush",outcome="rejected",reason="other"} 1"#,
            #"herald_deliveries_total{app="shop",platform="webpush",outcome="accepted",reason=""} 1"#,
            #"herald_deliveries_total{app="shop",platform="webpush",outcome="rejected",reason="SubscriptionGone"} 1"#,
        ] {
            #expect(text.contains(line), "\(line) in \(text)")
        }
    }

    @Test("a certificate's expiry is a gauge from the start; a provider key has none")
    func credentialExpiry() throws {
        let authority = try MockCertificateAuthority()
        let identity = try authority.issuePushCertificate(topic: "com.example.shop", validFor: 10 * 86400)
        let certificate = GatewayConfiguration.App(id: "shop", topic: "com.example.shop", environment: .sandbox, credentials: .certificate(identity))
        let token = GatewayConfiguration.App(
            id: "blog", topic: "com.example.blog", environment: .sandbox, credentials: .providerToken(.generate(keyID: "KEY1234567", teamID: "TEAM123456"))
        )
        let expiries = CredentialExpiry.of([certificate, token])
        #expect(expiries == [CredentialExpiry(app: "shop", credential: "certificate", expiry: identity.notValidAfter)])
        let metrics = GatewayMetrics(registry: .init())
        for expiry in expiries { metrics.recordCredentialExpiry(expiry) }
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(#"herald_credential_expiry_timestamp_seconds{app="shop",credential="certificate"} "#) })
        let value = try #require(Double(line.split(separator: " ").last ?? ""))
        #expect(abs(value - identity.notValidAfter.timeIntervalSince1970) < 1, "\(line)")
        #expect(!text.contains(#"app="blog""#))
        // What the start-up log says serves each app: identifiers and dates, never key material.
        #expect(token.credentialDescription == "provider key KEY1234567 of team TEAM123456")
        #expect(certificate.credentialDescription.hasPrefix("certificate '") && certificate.credentialDescription.contains("com.example.shop"))
        #expect(certificate.credentialDescription.hasSuffix("valid until \(identity.notValidAfter.formatted(.iso8601.year().month().day()))"))
        #expect(!certificate.credentialDescription.contains("PRIVATE"))
    }

    @Test("the daily warning starts 30 days before expiry, says the day and what to do, and says when it has expired")
    func credentialWarnings() throws {
        let expiry = try Date("2027-03-10T12:00:00Z", strategy: .iso8601)
        let credential = CredentialExpiry(app: "shop", credential: "certificate", expiry: expiry)
        #expect(credential.warning(now: expiry.addingTimeInterval(-31 * 86400)) == nil)
        #expect(credential.warning(now: expiry.addingTimeInterval(-10 * 86400)) == "the APNs certificate of app shop expires on 2027-03-10, in 10 days: renew it in Apple's developer account")
        #expect(credential.warning(now: expiry.addingTimeInterval(-3600))?.contains("in 1 day:") == true)
        #expect(credential.warning(now: expiry.addingTimeInterval(60)) == "the APNs certificate of app shop expired on 2027-03-10: sends fail until it is renewed")
    }
}
