import HeraldCore
@testable import HeraldFCM
import Testing

@Suite("FCM messages and registration tokens", .timeLimit(.minutes(6)))
struct FCMMessageTests {
    static let token = "cAbC-12_3:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

    @Test("a typed message is FCM's Message JSON: notification, string data, android priority, ttl as a duration string, collapse_key")
    func encoding() throws {
        var message = FCMMessage(
            token: Self.token, notification: .init(title: "Hi", body: "There", image: "https://example.com/a.png"), data: ["k": "v"],
            android: .init(priority: .high, timeToLive: .milliseconds(3500), collapseKey: "score", notification: .init(clickAction: "OPEN", channelID: "news")))
        message.setData(["n": 1], forKey: "object")
        message.setData(42, forKey: "number")
        message.setData("text", forKey: "text")
        let body = try JSONValue(parsing: try message.requestBody())
        let sent = try #require(body["message"])
        #expect(sent["token"] == .string(Self.token))
        #expect(sent["notification"] == ["title": "Hi", "body": "There", "image": "https://example.com/a.png"])
        #expect(sent["data"] == ["k": "v", "object": #"{"n":1}"#, "number": "42", "text": "text"], "non-strings JSON-encoded")
        #expect(sent["android"] == ["priority": "high", "ttl": "3.5s", "collapse_key": "score", "notification": ["channel_id": "news", "click_action": "OPEN"]])
    }

    @Test("a group's bodies are one body with each token put in: the same JSON as each message written on its own")
    func bodyTemplate() throws {
        var message = FCMMessage(token: "x", notification: .init(title: "Shipped", body: "a \"quoted\" token: HERALD"), data: ["token": "t", "k": "v"])
        message.android = .init(priority: .high, timeToLive: .seconds(60), collapseKey: "c")
        let template = try #require(FCMBodyTemplate(message))
        for token in ["abc:DEF-ghi_123", String(repeating: "Z", count: 4096)] {
            var each = message
            each.token = token
            #expect(try JSONValue(parsing: template.body(for: token)) == JSONValue(parsing: each.requestBody()))
        }
        // A message FCM would refuse makes no template: each body is written (and refused) on its own.
        #expect(FCMBodyTemplate(FCMMessage(token: "x", data: ["from": "me"])) == nil)
    }

    @Test("duration strings", arguments: [(Duration.seconds(60), "60s"), (.milliseconds(3500), "3.5s"), (.zero, "0s"), (.nanoseconds(1), "0.000000001s"), (.seconds(-1), "-1s")])
    func durations(duration: Duration, text: String) {
        #expect(FCMMessage.durationString(duration) == text)
    }

    @Test("reserved data keys are refused before sending, naming the key", arguments: ["from", "notification", "message_type", "google.c.a.e", "gcm.notification.x", "Google"])
    func reservedKeys(key: String) {
        let message = FCMMessage(token: Self.token, data: [key: "x"])
        #expect {
            try message.validate()
        } throws: { error in
            let error = error as? FCMError
            return error?.code == .invalidMessage && error?.field == "message.data" && error?.message.contains("\"\(key)\"") == true
        }
    }

    @Test("notification and data over 4,096 bytes are refused naming the size; exactly 4,096 passes")
    func size() throws {
        let fits = FCMMessage(token: Self.token, notification: .init(title: "ab", body: "cd"), data: ["k": String(repeating: "x", count: 4096 - 5)])
        try fits.validate()
        let over = FCMMessage(token: Self.token, notification: .init(title: "ab", body: "cde"), data: ["k": String(repeating: "x", count: 4096 - 5)])
        #expect {
            try over.validate()
        } throws: { error in
            (error as? FCMError)?.message.contains("4097 bytes") == true && (error as? FCMError)?.message.contains("4096") == true
        }
    }

    @Test("android priority and ttl out of range are refused naming the field")
    func androidFields() throws {
        #expect(Self.refusedField(FCMMessage(token: Self.token, android: .init(timeToLive: .seconds(29 * 86400)))) == "message.android.ttl")
        #expect(Self.refusedField(FCMMessage(token: Self.token, android: .init(timeToLive: .milliseconds(-500)))) == "message.android.ttl")
        #expect(Self.refusedField(try FCMMessage(raw: ["android": ["priority": "urgent"]], token: Self.token)) == "message.android.priority")
        #expect(Self.refusedField(try FCMMessage(raw: ["android": ["ttl": 60]], token: Self.token)) == "message.android.ttl")
        #expect(Self.refusedField(try FCMMessage(raw: ["notification": ["title": 1]], token: Self.token)) == "message.notification")
        try FCMMessage(raw: ["android": ["priority": "HIGH", "ttl": "2419200s"]], token: Self.token).validate()
        #expect(FCMMessage.durationSeconds("3.5s") == 3 && FCMMessage.durationSeconds("3.s") == nil && FCMMessage.durationSeconds("1e3s") == nil)
    }

    /// The field `message` is refused for; `nil` when it passes.
    static func refusedField(_ message: FCMMessage) -> String? {
        do {
            try message.validate()
            return nil
        } catch {
            return error.field ?? "(no field)"
        }
    }

    @Test("a raw message is sent as given, with the token set and non-string data JSON-encoded; a non-object is refused")
    func raw() throws {
        let message = try FCMMessage(raw: ["apns": ["headers": ["apns-priority": "10"]], "data": ["n": 5, "s": "x"], "token": "old"], token: Self.token)
        let sent = try #require(try JSONValue(parsing: try message.requestBody())["message"])
        #expect(sent["token"] == .string(Self.token))
        #expect(sent["data"] == ["n": "5", "s": "x"])
        #expect(sent["apns"] == ["headers": ["apns-priority": "10"]])
        #expect(throws: FCMError.self) { try FCMMessage(raw: "text") }
        #expect(throws: FCMError.self) { try FCMMessage(raw: ["topic": "news"]) }
    }

    @Test("registration tokens: 1 to 4,096 letters, digits, '-', '_' and ':'", arguments: [
        ("", false), ("a b", false), ("abc\n", false), ("abc/def", false), ("ééé", false), (String(repeating: "a", count: 4097), false),
        (String(repeating: "a", count: 4096), true), (token, true), ("a", true),
    ])
    func tokens(token: String, valid: Bool) {
        #expect(FCMRegistrationToken.isValid(token) == valid)
        let message = FCMMessage(token: token)
        if valid {
            #expect(throws: Never.self) { try message.validate() }
        } else {
            #expect {
                try message.validate()
            } throws: { error in
                (error as? FCMError)?.code == .invalidToken && (error as? FCMError)?.field == "message.token"
            }
        }
    }

    @Test("a token with a space is refused naming where")
    func tokenWithSpace() {
        #expect {
            try FCMRegistrationToken.check("abc def")
        } throws: { error in
            (error as? FCMError)?.message.contains("offset 3") == true
        }
    }
}
