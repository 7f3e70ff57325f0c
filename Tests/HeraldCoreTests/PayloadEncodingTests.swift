import Foundation
import HeraldCore
import Testing

/// Parses with Foundation's own parser, independent of Herald's: the bytes must be valid JSON.
func foundationJSON(_ bytes: [UInt8]) throws -> NSDictionary {
    try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary)
}

func json(_ payload: Payload) throws -> JSONValue {
    try JSONValue(parsing: payload.encode().bytes)
}

@Suite("Payload JSON")
struct PayloadEncodingTests {
    @Test("every aps key of apns-spec §3.1 is written with Apple's name and type")
    func everyAPSKey() throws {
        var aps = APS(
            alert: .text("Hello"),
            badge: 3,
            sound: .default,
            threadID: "thread-1",
            category: "MESSAGE",
            contentAvailable: true,
            mutableContent: true,
            interruptionLevel: .timeSensitive,
            relevanceScore: 0.75
        )
        aps.targetContentID = "window-2"
        aps.filterCriteria = "work"
        aps.urlArgs = ["boarding", "A998"]
        aps.timestamp = Date(timeIntervalSince1970: 1_700_000_123.9)
        aps.event = .update
        aps.contentState = ["score": 2, "team": "Blue"]
        aps.staleDate = Date(timeIntervalSince1970: 1_700_003_600)
        aps.dismissalDate = Date(timeIntervalSince1970: 1_700_007_200)
        aps.attributesType = "MatchAttributes"
        aps.attributes = ["matchID": "m-1"]
        aps.inputPushToken = true
        aps.inputPushChannel = "dHN0LXNyY2gtY2hubA=="
        aps.contentChanged = true

        let expected: JSONValue = [
            "aps": [
                "alert": "Hello", "badge": 3, "sound": "default", "thread-id": "thread-1",
                "category": "MESSAGE", "content-available": 1, "mutable-content": 1,
                "target-content-id": "window-2", "interruption-level": "time-sensitive",
                "relevance-score": 0.75, "filter-criteria": "work", "url-args": ["boarding", "A998"],
                "timestamp": 1_700_000_123, "event": "update", "content-state": ["score": 2, "team": "Blue"],
                "stale-date": 1_700_003_600, "dismissal-date": 1_700_007_200,
                "attributes-type": "MatchAttributes", "attributes": ["matchID": "m-1"],
                "input-push-token": 1, "input-push-channel": "dHN0LXNyY2gtY2hubA==", "content-changed": true,
            ]
        ]
        let payload = Payload(aps: aps)
        #expect(try json(payload) == expected)
        let parsed = try foundationJSON(payload.encode().bytes)
        #expect((parsed["aps"] as? NSDictionary)?.count == 22)
    }

    @Test("every alert dictionary key of §3.2")
    func everyAlertKey() throws {
        var content = AlertContent(title: "T", subtitle: "S", body: "B")
        content.launchImage = "launch.png"
        content.titleLocKey = "TITLE_KEY"
        content.titleLocArgs = ["a"]
        content.subtitleLocKey = "SUB_KEY"
        content.subtitleLocArgs = ["b", "c"]
        content.locKey = "BODY_KEY"
        content.locArgs = ["d"]
        content.actionLocKey = "VIEW"
        content.summaryArg = "Alice"
        content.summaryArgCount = 2
        content.action = "Show"
        let payload = Payload(aps: APS(alert: .content(content)))
        let expected: JSONValue = [
            "aps": [
                "alert": [
                    "title": "T", "subtitle": "S", "body": "B", "launch-image": "launch.png",
                    "title-loc-key": "TITLE_KEY", "title-loc-args": ["a"], "subtitle-loc-key": "SUB_KEY",
                    "subtitle-loc-args": ["b", "c"], "loc-key": "BODY_KEY", "loc-args": ["d"],
                    "action-loc-key": "VIEW", "summary-arg": "Alice", "summary-arg-count": 2, "action": "Show",
                ]
            ]
        ]
        #expect(try json(payload) == expected)
    }

    @Test("alert as a plain string, and the titled helper")
    func alertForms() throws {
        #expect(try json(Payload(aps: APS(alert: "Hi"))) == ["aps": ["alert": "Hi"]])
        #expect(try json(Payload(aps: APS(alert: .titled("T", body: "B")))) == ["aps": ["alert": ["title": "T", "body": "B"]]])
    }

    @Test("Live Activity alert with localised title and body and a sound inside the alert")
    func liveActivityAlert() throws {
        var content = AlertContent(title: .localized(key: "SCORE_TITLE", arguments: ["Blue"]), body: .localized(key: "SCORE_BODY"))
        content.sound = "goal.caf"
        var aps = APS(alert: .content(content))
        aps.event = .start
        let expected: JSONValue = [
            "aps": [
                "alert": [
                    "title": ["loc-key": "SCORE_TITLE", "loc-args": ["Blue"]],
                    "body": ["loc-key": "SCORE_BODY"],
                    "sound": "goal.caf",
                ],
                "event": "start",
            ]
        ]
        #expect(try json(Payload(aps: aps)) == expected)
    }

    @Test("badge 0 is written and clears the badge; no badge leaves it out")
    func badgeZeroVersusAbsent() throws {
        let zero = try Payload(aps: APS(badge: 0)).encode()
        #expect(zero.string == #"{"aps":{"badge":0}}"#)
        let absent = try Payload(aps: APS(alert: "x")).encode()
        #expect(!absent.string.contains("badge"))
        #expect(throws: PayloadError.self) { try Payload(aps: APS(badge: -1)).encode() }
    }

    @Test("sound as a name and as the critical-alert dictionary")
    func soundForms() throws {
        #expect(try json(Payload(aps: APS(sound: "ping.aiff"))) == ["aps": ["sound": "ping.aiff"]])
        let critical = Payload(aps: APS(sound: .critical(CriticalSound(name: "alarm.caf", volume: 0.5))))
        #expect(try json(critical) == ["aps": ["sound": ["critical": 1, "name": "alarm.caf", "volume": 0.5]]])
        let noVolume = Payload(aps: APS(sound: .critical(CriticalSound())))
        #expect(try json(noVolume) == ["aps": ["sound": ["critical": 1, "name": "default"]]])
        let loud = Payload(aps: APS(sound: .critical(CriticalSound(volume: 1.5))))
        let error = #expect(throws: PayloadError.self) { try loud.encode() }
        #expect(error?.code == .outOfRange)
    }

    @Test("custom keys go beside aps, any JSON value, sorted; aps is refused as a custom key")
    func customKeys() throws {
        var payload = Payload(aps: APS(alert: "x"))
        try payload.setCustom("zeta", ["nested": [1, 2.5, nil, true, "s"]])
        try payload.setCustom("alpha", "first")
        try payload.setCustom("count", 7)
        #expect(try payload.encode().string == #"{"aps":{"alert":"x"},"alpha":"first","count":7,"zeta":{"nested":[1,2.5,null,true,"s"]}}"#)
        let error = #expect(throws: PayloadError.self) { try payload.setCustom("aps", [:]) }
        #expect(error?.code == .reservedKey)
        #expect(throws: PayloadError.self) { try Payload(custom: ["aps": 1]) }
        payload.removeCustom("zeta")
        #expect(payload.custom.keys.sorted() == ["alpha", "count"])
    }

    @Test("custom and Live Activity values from any Encodable")
    func encodableValues() throws {
        struct ContentState: Codable, Equatable {
            var score: Int
            var updated: Date
        }
        let state = ContentState(score: 3, updated: Date(timeIntervalSinceReferenceDate: 1000))
        var aps = APS()
        try aps.setContentState(state)
        var payload = Payload(aps: aps)
        try payload.setCustom("order", encoding: ["id": 42])
        let encoded = try payload.encode()
        // The device decodes content-state with a default JSONDecoder: round-trip through it.
        let object = try foundationJSON(encoded.bytes)
        let stateData = try JSONSerialization.data(withJSONObject: (object["aps"] as! NSDictionary)["content-state"]!)
        #expect(try JSONDecoder().decode(ContentState.self, from: stateData) == state)
        #expect(try json(payload)["order"] == ["id": 42])
    }

    @Test("NaN and infinity are refused, not written as invalid JSON")
    func nonFiniteNumbers() throws {
        #expect(throws: PayloadError.self) { try Payload(aps: APS(relevanceScore: .nan)).encode() }
        var payload = Payload()
        try payload.setCustom("x", .array([.double(.infinity)]))
        let error = #expect(throws: PayloadError.self) { try payload.encode() }
        #expect(error?.code == .nonFiniteNumber)
    }

    @Test("strings are escaped so any text survives: quotes, backslashes, control characters, emoji")
    func escaping() throws {
        let text = "say \"hi\"\\ \n\t\r\u{08}\u{0C}\u{01}\u{1F} é 日本 👩‍👩‍👧 /"
        var payload = Payload(aps: APS(alert: .text(text)))
        try payload.setCustom("k\"ey\n", .string(text))
        let bytes = try payload.encode().bytes
        let object = try foundationJSON(bytes)
        #expect((object["aps"] as? NSDictionary)?["alert"] as? String == text)
        #expect(object["k\"ey\n"] as? String == text)
        #expect(String(decoding: bytes, as: UTF8.self).contains(#"\u0001"#))
    }

    @Test("the same payload always encodes to the same bytes")
    func stableOutput() throws {
        var first = Payload(aps: APS(alert: .titled("T", body: "B"), badge: 1))
        for key in ["b", "a", "d", "c", "e"] { try first.setCustom(key, [key: [key: 1]]) }
        var second = Payload(aps: APS(alert: .titled("T", body: "B"), badge: 1))
        for key in ["e", "c", "a", "d", "b"] { try second.setCustom(key, [key: [key: 1]]) }
        let bytes = try first.encode().bytes
        #expect(try second.encode().bytes == bytes)
        for _ in 0..<50 { #expect(try first.encode().bytes == bytes) }
    }

    @Test("apns-spec §3.3's plain alert example")
    func specExample() throws {
        var payload = Payload(aps: APS(alert: .titled("T", body: "B"), badge: 1, sound: .default))
        try payload.setCustom("custom", "x")
        #expect(try payload.encode().string == #"{"aps":{"alert":{"title":"T","body":"B"},"badge":1,"sound":"default"},"custom":"x"}"#)
        #expect(try Payload(aps: APS(contentAvailable: true)).encode().string == #"{"aps":{"content-available":1}}"#)
    }

    @Test("MDM and Wallet payloads have no aps")
    func presets() throws {
        #expect(try Payload.mdm(pushMagic: "5A7F-11").encode().string == #"{"mdm":"5A7F-11"}"#)
        #expect(try Payload.walletPassUpdate.encode().string == "{}")
        #expect(try Payload().encode().string == #"{"aps":{}}"#)
    }

    @Test("a content-available-only aps is recognised (it defaults the push type to background)")
    func contentAvailableOnly() {
        #expect(APS(contentAvailable: true).isContentAvailableOnly)
        #expect(!APS(badge: 1, contentAvailable: true).isContentAvailableOnly)
        #expect(!APS(alert: "x").isContentAvailableOnly)
    }
}

@Suite("Raw payloads")
struct RawPayloadTests {
    @Test("a raw JSON object passes through byte for byte, white space and key order included")
    func passThrough() throws {
        let text = "{ \"z\": 1,\n  \"aps\" : {\"alert\":\"é\"} , \"a\":[1.50, 2E3] }\n"
        let payload = try EncodedPayload(validating: text)
        #expect(payload.bytes == Array(text.utf8))
        #expect(String(decoding: payload.compactBytes, as: UTF8.self) == #"{"z":1,"aps":{"alert":"é"},"a":[1.50,2E3]}"#)
    }

    @Test("compacting keeps white space inside strings, escaped quotes included")
    func compactKeepsStrings() throws {
        let text = #"{ "a b" : "x \" y\\" , "c":" " }"#
        #expect(String(decoding: try EncodedPayload(validating: text).compactBytes, as: UTF8.self) == #"{"a b":"x \" y\\","c":" "}"#)
    }

    @Test("anything but a JSON object is refused with what it is", arguments: [
        ("[1,2]", PayloadError.Code.notAnObject), ("\"text\"", .notAnObject), ("42", .notAnObject),
        ("", .invalidJSON), ("{", .invalidJSON), ("{\"a\":1,}", .invalidJSON), ("{} {}", .invalidJSON),
        ("{\"a\":NaN}", .invalidJSON),
    ])
    func refused(text: String, code: PayloadError.Code) {
        let error = #expect(throws: PayloadError.self) { try EncodedPayload(validating: text) }
        #expect(error?.code == code)
    }
}
