import Foundation
import HeraldCore
import HeraldFCM
import HeraldHMS
import HeraldStore
import HeraldWebPush
import Testing

@testable import HeraldGateway

/// A push service's `Retry-After` with a 429 or 5xx is the device's retry time (and, for a host
/// failure, puts its host's next probe off until then): for each platform that has one.
@Suite("Retry-After as the retry's time")
struct RetryAfterOutcomeTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("Web Push, FCM and Push Kit: the retry is due when the service said, or after the back-off when it said nothing")
    func retryTimes() {
        let later = Self.now.addingTimeInterval(30)
        #expect(BrowserMessages.outcome(.failure(WebPushSendError(.serviceUnavailable, status: 503, reason: "", retryAfter: .seconds(30))), now: Self.now)
            == .retry(reason: .webPush(.serviceUnavailable), notBefore: later))
        #expect(BrowserMessages.outcome(.failure(WebPushSendError(.tooManyRequests, status: 429, reason: "", retryAfter: .seconds(30))), now: Self.now)
            == .retry(reason: .webPush(.tooManyRequests), notBefore: later))
        #expect(BrowserMessages.outcome(.failure(WebPushSendError(.serviceUnavailable, status: 500, reason: "")), now: Self.now)
            == .retry(reason: .webPush(.internalServerError)))
        #expect(AndroidMessages.outcome(.failure(FCMSendError(.unavailable, status: 503, reason: "", retryAfter: .seconds(30))), now: Self.now)
            == .retry(reason: .fcm(.unavailable), notBefore: later))
        #expect(AndroidMessages.outcome(.failure(FCMSendError(.quotaExceeded, status: 429, reason: "")), now: Self.now) == .retry(reason: .fcm(.quotaExceeded)))
        #expect(HuaweiMessages.outcome(of: HMSSendError(.internal, status: 500, reason: "", retryAfter: .seconds(30)), now: Self.now)
            == .retry(reason: .hms(.internalError), notBefore: later))
        #expect(HuaweiMessages.outcome(of: HMSSendError(.rateLimited, status: 503, reason: "")) == .retry(reason: .hms(.rateLimited)))
        // The host's circuit reads the same time.
        #expect(HostSignal(.retry(reason: .fcm(.unavailable), notBefore: later)) == .failed(notBefore: later))
    }
}
