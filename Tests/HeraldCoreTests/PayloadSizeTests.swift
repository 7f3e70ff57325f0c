import Foundation
import HeraldCore
import Testing

@Suite("Payload size limits and shortening")
struct PayloadSizeTests {
    let token = try! DeviceToken(String(repeating: "ab", count: 32))

    func notification(_ payload: EncodedPayload, type: PushType, topic: String) -> PushNotification {
        PushNotification(token: token, headers: PushHeaders(pushType: type, topic: topic), payload: payload)
    }

    /// A payload of exactly `size` bytes.
    func payload(ofSize size: Int) throws -> EncodedPayload {
        let overhead = #"{"aps":{"alert":""}}"#.utf8.count
        return try Payload(aps: APS(alert: .text(String(repeating: "a", count: size - overhead)))).encode()
    }

    @Test("4096 bytes pass and 4097 are refused as PayloadTooLarge with the size and the limit")
    func alertLimit() throws {
        try notification(payload(ofSize: 4096), type: .alert, topic: "com.x").validate()
        let error = #expect(throws: APNSError.self) {
            try notification(payload(ofSize: 4097), type: .alert, topic: "com.x").validate()
        }
        #expect(error?.reason == .payloadTooLarge)
        #expect(error?.status == 413)
        #expect(error?.origin == .local)
        #expect(error?.detail?.contains("4097") == true)
        #expect(error?.detail?.contains("4096") == true)
    }

    @Test("VoIP allows 5120 bytes")
    func voipLimit() throws {
        try notification(payload(ofSize: 5120), type: .voip, topic: "com.x.voip").validate()
        let error = #expect(throws: APNSError.self) {
            try notification(payload(ofSize: 5121), type: .voip, topic: "com.x.voip").validate()
        }
        #expect(error?.detail?.contains("5120") == true)
        #expect(PushType.allCases.filter { $0.maximumPayloadSize == 5120 } == [.voip])
    }

    @Test("a payload that fits is not touched")
    func fitsUnchanged() throws {
        var payload = Payload(aps: APS(alert: "short"))
        try payload.setCustom("id", 1)
        #expect(try payload.encode(fittingIn: 4096) == payload.encode())
    }

    @Test(
        "the body is shortened between characters, ends in an ellipsis, and keeps custom keys",
        arguments: [
            ("ascii words ", 4096), ("é", 4096), ("日本語", 4096), ("👩‍👩‍👧", 4096), ("🇫🇷", 5120),
            ("a\"b\\c\n", 4096), ("mixed é日👍 ", 256), ("x", 256),
        ]
    )
    func shortening(unit: String, limit: Int) throws {
        let body = String(repeating: unit, count: 3000)
        var content = AlertContent(title: "Title", body: .text(body))
        content.locArgs = ["kept"]
        var payload = Payload(aps: APS(alert: .content(content), badge: 2))
        try payload.setCustom("order", ["id": 42, "lines": ["α", "β"]])

        let encoded = try payload.encode(fittingIn: limit)

        #expect(encoded.count <= limit)
        let object = try foundationJSON(encoded.bytes)  // still valid UTF-8 JSON
        let aps = try #require(object["aps"] as? NSDictionary)
        let alert = try #require(aps["alert"] as? NSDictionary)
        let shortened = try #require(alert["body"] as? String)
        #expect(shortened.hasSuffix("…"))
        let kept = String(shortened.dropLast())
        #expect(body.hasPrefix(kept))  // whole characters only: a prefix of the original
        #expect(kept.count < body.count)
        #expect(alert["title"] as? String == "Title")
        #expect(aps["badge"] as? Int == 2)
        #expect(try JSONValue(parsing: encoded.bytes)["order"] == ["id": 42, "lines": ["α", "β"]])

        // As long as possible: one more character of the original would not fit.
        let characters = Array(body)
        var longer = content
        longer.body = .text(String(characters[..<(kept.count + 1)]) + "…")
        var longerPayload = payload
        longerPayload.aps?.alert = .content(longer)
        if !kept.hasSuffix(" ") && characters[kept.count] != " " {
            #expect(try longerPayload.encode().count > limit)
        }
    }

    @Test("a plain-string alert is shortened too; 256 bytes as for the legacy commands 0 and 1")
    func stringAlert() throws {
        let payload = Payload(aps: APS(alert: .text(String(repeating: "ü", count: 400))))
        let encoded = try payload.encode(fittingIn: 256)
        #expect(encoded.count <= 256)
        #expect(encoded.count >= 256 - 2)  // "ü" is two bytes: at most one character short of full
        let alert = try #require(try JSONValue(parsing: encoded.bytes)["aps"]?["alert"]?.stringValue)
        #expect(alert.hasSuffix("…"))
    }

    @Test("when nothing can be shortened enough, PayloadTooLarge says why")
    func impossible() throws {
        var payload = Payload(aps: APS(alert: .text(String(repeating: "a", count: 100))))
        try payload.setCustom("blob", .string(String(repeating: "b", count: 5000)))
        let error = #expect(throws: APNSError.self) { try payload.encode(fittingIn: 4096) }
        #expect(error?.reason == .payloadTooLarge)

        var noBody = Payload(aps: APS(badge: 1))
        try noBody.setCustom("blob", .string(String(repeating: "b", count: 5000)))
        let noBodyError = #expect(throws: APNSError.self) { try noBody.encode(fittingIn: 4096) }
        #expect(noBodyError?.detail?.contains("no plain-text alert body") == true)
    }
}
