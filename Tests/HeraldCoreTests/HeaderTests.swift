import Foundation
import HeraldCore
import Testing

@Suite("Headers and push types")
struct HeaderTests {
    static let suffixes: [(PushType, String?)] = [
        (.alert, ""), (.background, ""), (.location, ".location-query"), (.voip, ".voip"),
        (.complication, ".complication"), (.fileprovider, ".pushkit.fileprovider"), (.mdm, nil),
        (.liveactivity, ".push-type.liveactivity"), (.pushtotalk, ".voip-ptt"),
        (.widgets, ".push-type.widgets"), (.controls, ".push-type.controls"),
    ]

    @Test("all 11 push types of §1.5 with their topic suffixes")
    func allPushTypes() {
        #expect(PushType.allCases.count == 11)
        for (type, suffix) in Self.suffixes {
            #expect(type.topicSuffix == suffix, "\(type)")
        }
        #expect(PushType.voip.topic(forBundleID: "com.x") == "com.x.voip")
    }

    @Test("headers are values: a copy set anew leaves the original; equal fields are equal and hash alike, one object or two")
    func valueSemantics() {
        let original = PushHeaders(pushType: .alert, topic: "com.example.app", expiration: .at(Date(timeIntervalSince1970: 1_700_000_000)), collapseID: "c")
        var copy = original
        #expect(copy.isSameInstance(as: original))
        copy.collapseID = "d"
        #expect(!copy.isSameInstance(as: original))
        #expect(original.collapseID == "c")
        #expect(copy.collapseID == "d")
        #expect(copy != original)
        copy.collapseID = "c"
        #expect(!copy.isSameInstance(as: original))
        #expect(copy == original)
        #expect(copy.hashValue == original.hashValue)
        #expect(Set([copy, original]).count == 1)
        var each = original
        each.pushType = .background
        each.topic = nil
        each.priority = .throttled
        each.expiration = .immediately
        each.apnsID = UUID(uuidString: "123e4567-e89b-12d3-a456-426614174000")
        #expect(each.pushType == .background && each.topic == nil && each.priority == .throttled && each.expiration == .immediately)
        #expect(each.apnsID?.uuidString == "123E4567-E89B-12D3-A456-426614174000")
        #expect(original == PushHeaders(pushType: .alert, topic: "com.example.app", expiration: .at(Date(timeIntervalSince1970: 1_700_000_000)), collapseID: "c"))
    }

    @Test("each push type accepts the bundle ID plus its suffix and refuses a topic without it")
    func topicRules() throws {
        for (type, suffix) in Self.suffixes {
            guard let suffix, !suffix.isEmpty else { continue }
            var headers = PushHeaders(pushType: type, topic: "com.example.app" + suffix)
            try headers.validate()
            headers.topic = "com.example.app"
            let error = #expect(throws: APNSError.self) { try headers.validate() }
            #expect(error?.reason == .badTopic, "\(type)")
            #expect(error?.detail?.contains(suffix) == true)
            headers.topic = suffix  // the suffix alone has no bundle ID
            #expect(throws: APNSError.self) { try headers.validate() }
        }
    }

    @Test("alert topics with another type's unmistakable suffix are refused; .voip bundle IDs are allowed")
    func alertTopicSuffixes() throws {
        let error = #expect(throws: APNSError.self) {
            try PushHeaders(pushType: .alert, topic: "com.x.push-type.liveactivity").validate()
        }
        #expect(error?.detail?.contains("liveactivity") == true)
        try PushHeaders(pushType: .alert, topic: "com.acme.voip").validate()
        try PushHeaders(pushType: .mdm, topic: "com.apple.mgmt.External.5e6b1cc2-9a0c-4e8f").validate()
        let missing = #expect(throws: APNSError.self) { try PushHeaders(pushType: .alert, topic: "").validate() }
        #expect(missing?.reason == .missingTopic)
    }

    @Test("a topic's suffix is compared byte for byte, as APNs compares it, not as equivalent characters")
    func topicSuffixBytes() throws {
        // "é" as one scalar and as "e" and a combining accent: equal as characters, not as bytes.
        let composed = "com.caf\u{E9}", decomposed = "com.cafe\u{301}"
        #expect(composed.hasSuffix("e\u{301}"))
        #expect(!composed.hasUTF8Suffix("e\u{301}"))
        #expect(decomposed.hasUTF8Suffix("e\u{301}"))
        #expect("ab".hasUTF8Suffix("ab") && "ab".hasUTF8Suffix("") && !"b".hasUTF8Suffix("ab"))
        try PushHeaders(pushType: .voip, topic: decomposed + ".voip").validate()
        let wrong = #expect(throws: APNSError.self) { try PushHeaders(pushType: .voip, topic: composed + ".voi").validate() }
        #expect(wrong?.reason == .badTopic)
    }

    @Test("background must be priority 5; its default is 5, everything else defaults to 10")
    func priorities() throws {
        #expect(PushHeaders(pushType: .background).effectivePriority == .throttled)
        #expect(PushHeaders(pushType: .alert).effectivePriority == .immediate)
        try PushHeaders(pushType: .background, topic: "com.x").validate()
        for priority in [PushPriority.immediate, .low] {
            let error = #expect(throws: APNSError.self) {
                try PushHeaders(pushType: .background, topic: "com.x", priority: priority).validate()
            }
            #expect(error?.reason == .badPriority)
        }
        try PushHeaders(pushType: .alert, topic: "com.x", priority: .low).validate()
        #expect(try PushPriority(header: "5") == .throttled)
        #expect(throws: APNSError.self) { try PushPriority(header: "7") }
    }

    @Test("collapse-id: 64 bytes at most, counted in UTF-8")
    func collapseID() throws {
        try PushHeaders(topic: "com.x", collapseID: String(repeating: "a", count: 64)).validate()
        let long = #expect(throws: APNSError.self) {
            try PushHeaders(topic: "com.x", collapseID: String(repeating: "a", count: 65)).validate()
        }
        #expect(long?.reason == .badCollapseId)
        #expect(long?.detail?.contains("65 bytes") == true)
        // 22 characters of 3 bytes each: 66 bytes.
        #expect(throws: APNSError.self) {
            try PushHeaders(topic: "com.x", collapseID: String(repeating: "日", count: 22)).validate()
        }
        #expect(throws: APNSError.self) { try PushHeaders(topic: "com.x", collapseID: "").validate() }
    }

    @Test("collapse-id: a control character (CR LF, NUL, tab, DEL) is BadCollapseId, never a header APNs drops the connection for",
          arguments: ["a\r\nb", "a\u{0}", "\t", "x\u{7F}", "\n"])
    func collapseIDControl(_ value: String) throws {
        let error = #expect(throws: APNSError.self) { try PushHeaders(topic: "com.x", collapseID: value).validate() }
        #expect(error?.reason == .badCollapseId)
        #expect(error?.detail?.contains("control character") == true)
        try PushHeaders(topic: "com.x", collapseID: "order-42 📦").validate()
    }

    @Test("expiration: a date, 0 to store nothing, or absent")
    func expiration() throws {
        #expect(try PushExpiration(unixSeconds: 0) == .immediately)
        #expect(try PushExpiration(unixSeconds: 1_800_000_000).unixSeconds == 1_800_000_000)
        #expect(PushExpiration.at(Date(timeIntervalSince1970: 1_800_000_000.7)).description == "1800000000")
        let error = #expect(throws: APNSError.self) { try PushExpiration(unixSeconds: -1) }
        #expect(error?.reason == .badExpirationDate)
        // Past year 9999 is refused, naming the range: such a value overflowed a store's
        // milliseconds and crashed the gateway.
        #expect(try PushExpiration(unixSeconds: PushExpiration.maximumUnixSeconds).unixSeconds == 253_402_300_799)
        for value in [PushExpiration.maximumUnixSeconds + 1, 9_300_000_000_000_000, Int.max, Int.min] {
            let error = #expect(throws: APNSError.self) { try PushExpiration(unixSeconds: value) }
            #expect(error?.reason == .badExpirationDate)
            #expect(error?.detail?.contains("0 to 253402300799") == true)
        }
        #expect(PushExpiration.at(Date(timeIntervalSince1970: 1e300)).unixSeconds == PushExpiration.maximumUnixSeconds)
        let fields = PushHeaders(topic: "t").fields.map(\.name)
        #expect(!fields.contains("apns-expiration"))
        #expect(PushHeaders(topic: "t", expiration: .immediately).fields.contains { $0 == ("apns-expiration", "0") })
    }

    @Test("apns-id is sent as a lower-case UUID; anything else is BadMessageId")
    func apnsID() throws {
        let id = try PushHeaders.apnsID("123E4567-E89B-12D3-A456-426614174000")
        let headers = PushHeaders(topic: "t", apnsID: id)
        #expect(headers.fields.contains { $0 == ("apns-id", "123e4567-e89b-12d3-a456-426614174000") })
        for bad in ["", "123", "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"] {
            let error = #expect(throws: APNSError.self) { try PushHeaders.apnsID(bad) }
            #expect(error?.reason == .badMessageId)
        }
    }

    @Test("the request: POST /3/device/<token> with authorization first and the apns headers")
    func request() throws {
        let token = try DeviceToken("AB" + String(repeating: "0", count: 62))
        let headers = PushHeaders(pushType: .voip, topic: "com.x.voip", expiration: .immediately, collapseID: "c")
        let notification = PushNotification(token: token, headers: headers, payload: try EncodedPayload(validating: "{}"))
        let request = notification.request(authorization: "bearer a.b.c")
        #expect(request.method == "POST")
        #expect(request.path == "/3/device/ab" + String(repeating: "0", count: 62))
        #expect(request.headerFields.map(\.name) == ["authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id"])
        #expect(request[header: "apns-push-type"] == "voip")
        #expect(request[header: "apns-priority"] == "10")
        #expect(request.body == Array("{}".utf8))
        #expect(notification.request(authorization: nil)[header: "authorization"] == nil)
    }
}

@Suite("Environments")
struct EnvironmentTests {
    @Test("production and sandbox are Apple's hosts on 443")
    func presets() {
        #expect(APNSEnvironment.production.authority == "api.push.apple.com:443")
        #expect(APNSEnvironment.sandbox.authority == "api.sandbox.push.apple.com:443")
        #expect(APNSEnvironment.production.onPort(APNSEnvironment.alternatePort).port == 2197)
    }

    @Test("host URLs", arguments: [
        ("https://127.0.0.1:8443", "127.0.0.1", 8443), ("https://localhost", "localhost", 443),
        ("https://[::1]:9000/", "::1", 9000), ("HTTPS://gw.example.com:2197", "gw.example.com", 2197),
    ])
    func urls(url: String, host: String, port: Int) throws {
        let environment = try APNSEnvironment(url: url)
        #expect(environment.host == host)
        #expect(environment.port == port)
        #expect(environment.kind == .custom)
    }

    @Test("Apple's own hosts parse to their presets")
    func appleHosts() throws {
        #expect(try APNSEnvironment(url: "https://api.push.apple.com") == .production)
        #expect(try APNSEnvironment(url: "https://api.sandbox.push.apple.com:443") == .sandbox)
        #expect(try APNSEnvironment(url: "https://[::1]:9000").authority == "[::1]:9000")
    }

    @Test("bad host URLs are refused", arguments: ["http://x:1", "x:1", "https://", "https://x:0", "https://x:99999", "https://x/path", "https://[::1"])
    func badURLs(url: String) {
        #expect(throws: EnvironmentError.self) { try APNSEnvironment(url: url) }
    }
}
