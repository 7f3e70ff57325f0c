import Foundation
import HeraldCore
import HeraldWebPush
import Testing

@testable import HeraldGateway
@testable import HeraldStore

/// What a browser receives for a notification, and how each Web Push answer is recorded, as values.
@Suite("Browser messages")
struct BrowserMessagesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let url = "https://shop.example.com/"

    static func queued(
        _ payload: String, expiration: PushExpiration? = nil, priority: PushPriority? = nil, collapseID: String? = nil
    ) -> QueuedNotification {
        QueuedNotification(
            id: "0190aaaa-bbbb-1", app: "shop", payload: Array(payload.utf8), pushType: .alert, priority: priority, expiration: expiration,
            collapseID: collapseID, badge: .none, deadline: now.addingTimeInterval(3600))
    }

    static func json(_ bytes: [UInt8]) throws -> JSONValue { try JSONValue(parsing: bytes) }

    @Test("aps.alert becomes the title and body, custom keys the data, the badge app_badge; navigate is the app's URL")
    func declarative() throws {
        let object = try Self.json(try BrowserMessages.payload(Array(#"{"aps":{"alert":{"title":"T","body":"B"},"badge":4},"order":7}"#.utf8), badge: nil, defaultURL: Self.url))
        #expect(object == [
            "web_push": 8030, "app_badge": 4,
            "notification": ["title": "T", "body": "B", "navigate": .string(Self.url), "data": ["order": 7]],
        ])
        let plain = try Self.json(try BrowserMessages.payload(Array(#"{"aps":{"alert":"Hi"}}"#.utf8), badge: 9, defaultURL: Self.url))
        #expect(plain == ["web_push": 8030, "app_badge": 9, "notification": ["title": "Hi", "navigate": .string(Self.url)]], "an incremented badge wins")
        let bodyOnly = try Self.json(try BrowserMessages.payload(Array(#"{"aps":{"alert":{"body":"B"}}}"#.utf8), badge: nil, defaultURL: Self.url))
        #expect(bodyOnly["notification"]?["title"] == "B" && bodyOnly["notification"]?["body"] == nil)
        #expect(throws: WebPushError.self) { _ = try BrowserMessages.payload(Array("[1]".utf8), badge: nil, defaultURL: Self.url) }
    }

    @Test("TTL is what is left of the expiration or the maximum age, 0 for now-or-never; urgency from priority; topic from the collapse ID or the ID")
    func headers() throws {
        let late = try BrowserMessages.message(for: Self.queued(#"{"aps":{"alert":"x"}}"#), badge: nil, defaultURL: Self.url, now: Self.now.addingTimeInterval(600))
        #expect(late.timeToLive == 3000 && late.urgency == nil && late.topic == "0190aaaa-bbbb-1")
        let expiring = try BrowserMessages.message(
            for: Self.queued(#"{"aps":{"alert":"x"}}"#, expiration: .at(Self.now.addingTimeInterval(90)), priority: .immediate, collapseID: "order 42 / status"),
            badge: nil, defaultURL: Self.url, now: Self.now)
        #expect(expiring.timeToLive == 90 && expiring.urgency == .high && expiring.topic?.count == 32)
        let never = try BrowserMessages.message(for: Self.queued(#"{"aps":{"alert":"x"}}"#, expiration: .immediately, priority: .low), badge: nil, defaultURL: Self.url, now: Self.now)
        #expect(never.timeToLive == 0 && never.urgency == .low)
        let past = try BrowserMessages.message(for: Self.queued(#"{"aps":{"alert":"x"}}"#, expiration: .at(Self.now.addingTimeInterval(-5))), badge: nil, defaultURL: Self.url, now: Self.now)
        #expect(past.timeToLive == 0)
        // A collapse ID of 4n+1 characters is hashed (Apple's service cannot decode it).
        #expect(WebPushMessage.topic(forCollapseID: "spike").count == 32 && WebPushMessage.topic(forCollapseID: "sale") == "sale")
    }

    @Test("answers as outcomes: gone retires at the answer's time, BadJwtToken retries, 4xx rejects with the reason, 429/5xx/no answer retry")
    func outcomes() {
        func failed(_ code: WebPushSendError.Code, _ status: Int?, _ reason: String) -> DeliveryOutcome.Result {
            BrowserMessages.outcome(.failure(WebPushSendError(code, status: status, reason: reason)), now: Self.now)
        }
        #expect(BrowserMessages.outcome(.success(WebPushReceipt(location: "/message/1", attempts: 1)), now: Self.now) == .accepted(receipt: "/message/1"))
        #expect(failed(.subscriptionGone, 410, "Unregistered") == .rejected(reason: .webPush(.subscriptionGone), timestamp: Self.now))
        #expect(failed(.payloadTooLarge, 413, "PayloadTooLarge") == .failed(reason: .webPush(.payloadTooLarge)))
        #expect(failed(.rejected, 403, "BadJwtToken") == .retry(reason: .webPush(.badJwtToken)))
        #expect(failed(.rejected, 401, "unauthorized") == .retry(reason: .webPush(.badJwtToken)))
        #expect(failed(.rejected, 403, "VapidPkHashMismatch") == .rejected(reason: .webPush(.vapidPkHashMismatch), timestamp: nil))
        #expect(failed(.rejected, 400, "BadWebPushTopic") == .rejected(reason: .webPush(.badWebPushTopic), timestamp: nil))
        #expect(failed(.tooManyRequests, 429, "") == .retry(reason: .webPush(.tooManyRequests)))
        #expect(failed(.serviceUnavailable, 500, "") == .retry(reason: .webPush(.internalServerError)))
        #expect(failed(.serviceUnavailable, 503, "") == .retry(reason: .webPush(.serviceUnavailable)))
        #expect(failed(.timedOut, nil, "") == .retry(reason: .gateway(.timedOut)))
        #expect(failed(.connectionFailed, nil, "") == .retry(reason: .gateway(.connectionFailed)))
        #expect(failed(.invalidRequest, nil, "") == .failed(reason: .gateway(.payloadInvalid)))
        // The endpoint policy refused it (at send or at connect): failed, the device kept.
        #expect(failed(.endpointNotAllowed, nil, "10.0.0.5 is a private address") == .failed(reason: .webPush(.endpointNotAllowed)))
        // A reason the push service made up reaches the status as it is, as a reason of its own.
        #expect(failed(.rejected, 400, "SomethingNew") == .rejected(reason: "SomethingNew", timestamp: nil))
    }

    @Test("a subscription's ID: wp_ and 32 base32 characters, stable per endpoint, never hex")
    func ids() throws {
        let address = try WebPushAddress(endpoint: "https://web.push.apple.com/QGuQ", p256dh: "BCVx", auth: "BTBZ")
        #expect(address.id == WebPushAddress.id(forEndpoint: "https://web.push.apple.com/QGuQ") && WebPushAddress.isID(address.id))
        #expect(address.id != WebPushAddress.id(forEndpoint: "https://web.push.apple.com/QGuR"))
        #expect(!WebPushAddress.isID(String(repeating: "a", count: 64)) && !WebPushAddress.isID("wp_short"))
        #expect(!"\(address)".contains("QGuQ"), "the endpoint is not printed")
        #expect(throws: StoreError.self) { _ = try WebPushAddress(endpoint: "https://a/\u{1}", p256dh: "x", auth: "y") }
        #expect(throws: StoreError.self) { _ = try WebPushAddress(endpoint: "https://a/", p256dh: "has space", auth: "y") }
    }
}
