import Foundation
import HeraldCore
@testable import HeraldGateway
import HeraldStore
import Testing

/// Receipt tokens as values: their layout, their MAC over the device, and how one is written
/// into a message.
@Suite("Receipt tokens")
struct ReceiptTokenTests {
    static let notification = "0190f2a4-7b3c-7d10-8e2f-1a2b3c4d5e6f"
    static let key = ReceiptKey(slot: 3, secret: Array(repeating: 7, count: 32))
    static let device = String(repeating: "ab", count: 32)

    static func make(app: String = "shop", device: String = device, platform: DevicePlatform = .apns, key: ReceiptKey = key) throws -> String {
        let maker = try #require(ReceiptMaker(app: app, notification: notification, platform: platform, key: key, now: Date(timeIntervalSince1970: 1_780_000_000)))
        return maker.receipt(for: device)
    }

    @Test("48 characters of base64url that name the notification, platform, time, slot and device's hash, and verify for that device only")
    func roundTrip() throws {
        let text = try Self.make(platform: .fcm)
        #expect(text.utf8.count == 48)
        #expect(text.utf8.allSatisfy(Base64URL.isAlphabet))
        let token = try ReceiptToken(parsing: text)
        #expect(token.notification == Self.notification)
        #expect(token.platform == .fcm)
        #expect(token.slot == 3)
        #expect(token.issuedAt == Date(timeIntervalSince1970: 1_780_000_000))
        #expect(token.deviceHash == UInt32(truncatingIfNeeded: KeySpace.hash(Self.device)))
        #expect(token.verify(app: "shop", device: Self.device, key: Self.key))
        // Another device, another app, another key: refused.
        #expect(!token.verify(app: "shop", device: String(repeating: "cd", count: 32), key: Self.key))
        #expect(!token.verify(app: "other", device: Self.device, key: Self.key))
        #expect(!token.verify(app: "shop", device: Self.device, key: ReceiptKey(slot: 3, secret: Array(repeating: 8, count: 32))))
    }

    @Test("every byte altered is refused: the MAC covers the whole token")
    func everyByteAltered() throws {
        let bytes = try #require(Base64URL.decode(try Self.make()))
        for index in bytes.indices {
            var altered = bytes
            altered[index] ^= 0x01
            guard let token = try? ReceiptToken(parsing: Base64URL.encode(altered)) else { continue }  // now malformed
            // The device found by an altered hash would be another: only the real one is tried here.
            #expect(!token.verify(app: "shop", device: Self.device, key: Self.key), "byte \(index)")
        }
    }

    @Test("malformed: too short, too long, not base64url, another version, an unknown platform")
    func malformed() throws {
        let good = try Self.make()
        var bytes = try #require(Base64URL.decode(good))
        for text in ["", String(good.dropLast()), good + "A", String(good.dropLast()) + "=", String(good.dropLast()) + "+", "é" + good.dropFirst(2)] {
            #expect(throws: ReceiptTokenError(.malformed)) { try ReceiptToken(parsing: text) }
        }
        bytes[0] = 0x20 | (bytes[0] & 0x0F)
        #expect(throws: ReceiptTokenError(.malformed)) { try ReceiptToken(parsing: Base64URL.encode(bytes)) }
        bytes = try #require(Base64URL.decode(good))
        bytes[1] = 200
        #expect(throws: ReceiptTokenError(.malformed)) { try ReceiptToken(parsing: Base64URL.encode(bytes)) }
    }

    @Test("written first into a message's object; left out when it would not fit or the message is no object")
    func inserted() throws {
        let receipt = try Self.make()
        func text(_ json: String, limit: Int = 4096) -> String? {
            ReceiptToken.inserted(receipt, into: Array(json.utf8), limit: limit).map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(text("{}") == "{\"herald\":\"\(receipt)\"}")
        #expect(text(" { } ") == " {\"herald\":\"\(receipt)\" } ")
        #expect(text("{\"aps\":{\"alert\":\"Hi\"}}") == "{\"herald\":\"\(receipt)\",\"aps\":{\"alert\":\"Hi\"}}")
        let payload = "{\"aps\":{\"alert\":\"Hi\"}}"
        // `"herald":"…",` is 60 bytes.
        #expect(text(payload, limit: payload.utf8.count + 59) == nil)
        #expect(text(payload, limit: payload.utf8.count + 60)?.utf8.count == payload.utf8.count + 60)
        #expect(text("[1]") == nil)
        #expect(text("\"x\"") == nil)
        // Every result is JSON whose receipt is the one written.
        for json in ["{}", " {\n} ", "{\"a\":1}"] {
            let value = try JSONValue(parsing: Array(try #require(text(json)).utf8))
            #expect(value["herald"]?.stringValue == receipt)
        }
    }

    @Test("a notification ID's bytes and text round-trip")
    func uuid() throws {
        let bytes = try #require(ReceiptToken.uuidBytes(Self.notification))
        #expect(ReceiptToken.uuidText(bytes[...]) == Self.notification)
        #expect(ReceiptToken.uuidBytes("not-a-uuid") == nil)
        #expect(ReceiptToken.uuidBytes(String(Self.notification.dropLast())) == nil)
    }
}
