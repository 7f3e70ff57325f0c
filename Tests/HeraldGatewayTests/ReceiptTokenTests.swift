import Crypto
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

    static func make(app: String = "shop", device: String = device, platform: DevicePlatform = .apns, kind: TokenKind = .alert, key: ReceiptKey = key) throws -> String {
        let maker = try #require(
            ReceiptMaker(app: app, notification: notification, platform: platform, kind: kind, key: key, now: Date(timeIntervalSince1970: 1_780_000_000)))
        return maker.receipt(for: device)
    }

    @Test("48 characters of base64url that name the notification, platform, kind, time, slot and device, and verify with their app's key only")
    func roundTrip() throws {
        let text = try Self.make(platform: .fcm, kind: .liveactivity)
        #expect(text.utf8.count == 48)
        #expect(text.utf8.allSatisfy(Base64URL.isAlphabet))
        #expect(Base64URL.decode(text) == ReceiptToken.decode(text.utf8), "the gateway's own decoder agrees with the general one")
        let token = try ReceiptToken(parsing: text)
        #expect(token.notification == Self.notification)
        #expect(token.platform == .fcm && token.kind == .liveactivity)
        #expect(token.slot == 3)
        #expect(token.issuedAt == Date(timeIntervalSince1970: 1_780_000_000))
        #expect(token.deviceHash == UInt32(truncatingIfNeeded: KeySpace.hash(Self.device)), "its first 32 bits are the row's key hash")
        #expect(token.names(Self.device) && !token.names(String(repeating: "cd", count: 32)))
        #expect(token.verify(app: "shop", key: Self.key))
        #expect(!token.verify(app: "other", key: Self.key))
        #expect(!token.verify(app: "shop", key: ReceiptKey(slot: 3, secret: Array(repeating: 8, count: 32))))
    }

    @Test("the MAC is HMAC-SHA256 (RFC 2104) as swift-crypto computes it, over the domain, the app and the token's first 28 bytes")
    func macIsHMAC() throws {
        let bytes = try #require(Base64URL.decode(try Self.make()))
        let expected = HMAC<SHA256>.authenticationCode(
            for: Array("herald-receipt-v1".utf8) + Array("shop".utf8) + [0] + bytes[..<28], using: SymmetricKey(data: Array(repeating: UInt8(7), count: 32)))
        #expect(Array(expected).prefix(8) == bytes[28...])
        // A key longer than a block is hashed first, as RFC 2104 says.
        let long = Array(repeating: UInt8(9), count: 100)
        let mac = ReceiptKey(slot: 0, secret: long).start(app: "a").mac(ArraySlice([1, 2, 3]))
        let reference = HMAC<SHA256>.authenticationCode(for: Array("herald-receipt-v1".utf8) + Array("a".utf8) + [0, 1, 2, 3], using: SymmetricKey(data: long))
        #expect(Array(mac) == Array(reference))
    }

    @Test("every byte altered is refused: the MAC covers the whole token")
    func everyByteAltered() throws {
        let bytes = try #require(Base64URL.decode(try Self.make()))
        for index in bytes.indices {
            var altered = bytes
            altered[index] ^= 0x01
            guard let token = try? ReceiptToken(parsing: Base64URL.encode(altered)) else { continue }  // now malformed
            #expect(!token.verify(app: "shop", key: Self.key), "byte \(index)")
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
