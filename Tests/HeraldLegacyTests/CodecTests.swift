import Foundation
import HeraldCore
@testable import HeraldLegacy
import NIOCore
import Testing

@Suite("Legacy encoders: the bytes of apns-spec §4")
struct CodecTests {
    static let token = try! DeviceToken(bytes: Array(1...32))
    static let payload = try! EncodedPayload(validating: #"{"aps":{}}"#)
    static let tokenBytes: [UInt8] = Array(1...32)
    static let payloadBytes: [UInt8] = Array(#"{"aps":{}}"#.utf8)

    func encode(_ notification: LegacyNotification, identifier: UInt32 = 0x0102_0304, command: LegacyCommand) throws -> [UInt8] {
        var buffer = ByteBuffer()
        try LegacyEncoder.write(notification, identifier: identifier, command: command, into: &buffer)
        #expect(buffer.readableBytes == LegacyEncoder.size(of: notification, command: command))
        return buffer.bytes
    }

    @Test("command 0: command, token length, token, payload length, payload")
    func simple() throws {
        let notification = try LegacyNotification(token: Self.token, payload: Self.payload)
        let expected: [UInt8] = [0x00, 0x00, 0x20] + Self.tokenBytes + [0x00, 0x0A] + Self.payloadBytes
        #expect(try encode(notification, command: .simple) == expected)
    }

    @Test("command 1: with the identifier and the expiry in UNIX seconds, big-endian")
    func enhanced() throws {
        let notification = try LegacyNotification(token: Self.token, payload: Self.payload, expiration: .at(Date(timeIntervalSince1970: 1_600_000_000)))
        let expected: [UInt8] = [0x01, 0x01, 0x02, 0x03, 0x04, 0x5F, 0x5E, 0x10, 0x00, 0x00, 0x20] + Self.tokenBytes + [0x00, 0x0A] + Self.payloadBytes
        #expect(try encode(notification, command: .enhanced) == expected)
    }

    @Test("command 1 without an expiry sends 0: do not store")
    func enhancedNoExpiry() throws {
        let notification = try LegacyNotification(token: Self.token, payload: Self.payload)
        let bytes = try encode(notification, identifier: 7, command: .enhanced)
        #expect(Array(bytes[0..<9]) == [0x01, 0, 0, 0, 7, 0, 0, 0, 0])
    }

    @Test("command 2: frame length, then items 1 to 5 each with id, length and data")
    func frame() throws {
        let notification = try LegacyNotification(
            token: Self.token, payload: Self.payload, expiration: .at(Date(timeIntervalSince1970: 1_600_000_000)), priority: .immediate
        )
        var expected: [UInt8] = [0x02, 0x00, 0x00, 0x00, 0x42]
        expected += [0x01, 0x00, 0x20] + Self.tokenBytes
        expected += [0x02, 0x00, 0x0A] + Self.payloadBytes
        expected += [0x03, 0x00, 0x04, 0x01, 0x02, 0x03, 0x04]
        expected += [0x04, 0x00, 0x04, 0x5F, 0x5E, 0x10, 0x00]
        expected += [0x05, 0x00, 0x01, 0x0A]
        #expect(try encode(notification, command: .frame) == expected)
    }

    @Test("command 2 without a priority leaves item 5 out; priority 5 is one byte 5")
    func framePriority() throws {
        let without = try encode(LegacyNotification(token: Self.token, payload: Self.payload), command: .frame)
        #expect(without.count == 5 + 62)
        #expect(Array(without[1..<5]) == [0, 0, 0, 62])
        let throttled = try encode(LegacyNotification(token: Self.token, payload: Self.payload, priority: .throttled), command: .frame)
        #expect(Array(throttled.suffix(4)) == [0x05, 0x00, 0x01, 0x05])
    }

    @Test("the error response is 8, status, identifier; feedback tuples are time, length, token")
    func responseAndTuple() throws {
        var buffer = ByteBuffer()
        LegacyErrorResponse(status: .invalidToken, identifier: 0xA0B0_C0D0).write(into: &buffer)
        #expect(buffer.bytes == [0x08, 0x08, 0xA0, 0xB0, 0xC0, 0xD0])
        #expect(try LegacyErrorResponseDecoder.next(&buffer) == LegacyErrorResponse(status: .invalidToken, identifier: 0xA0B0_C0D0))

        var tuple = ByteBuffer()
        FeedbackTuple(timestamp: Date(timeIntervalSince1970: 1_600_000_000), token: Self.token).write(into: &tuple)
        #expect(tuple.bytes == [0x5F, 0x5E, 0x10, 0x00, 0x00, 0x20] + Self.tokenBytes)
        let decoded = try FeedbackTupleDecoder.next(&tuple)
        #expect(decoded?.token == Self.token)
        #expect(decoded?.timestamp == Date(timeIntervalSince1970: 1_600_000_000))
    }

    @Test("payload limits: 256 bytes for commands 0 and 1, 2048 for command 2")
    func payloadLimits() throws {
        let body = String(repeating: "x", count: 300)
        let notification = try LegacyNotification(token: Self.token, payload: Payload(aps: APS(alert: .text(body))).encode())
        for command in [LegacyCommand.simple, .enhanced] {
            var buffer = ByteBuffer()
            #expect {
                try LegacyEncoder.write(notification, identifier: 1, command: command, into: &buffer)
            } throws: { error in
                let error = error as? LegacyError
                return error?.code == .invalidNotification && error?.message.contains("at most 256") == true
            }
            #expect(buffer.readableBytes == 0)
        }
        #expect(try encode(notification, command: .frame).count == LegacyEncoder.size(of: notification, command: .frame))
        let tooLarge = try LegacyNotification(token: Self.token, payload: Payload(aps: APS(alert: .text(String(repeating: "y", count: 2100)))).encode())
        var buffer = ByteBuffer()
        #expect(throws: LegacyError.self) { try LegacyEncoder.write(tooLarge, identifier: 1, command: .frame, into: &buffer) }
    }

    @Test("the shortening helper fits a long alert into 256 bytes and keeps the custom keys")
    func shortening() throws {
        let payload = try Payload(aps: APS(alert: .text(String(repeating: "Long news. ", count: 60))), custom: ["order": ["id": 42]])
        let notification = try LegacyNotification(token: Self.token, shortening: payload, toFit: .enhanced)
        #expect(notification.payload.count <= 256)
        #expect(notification.payload.json["order"]?["id"] == 42)
        #expect(notification.payload.json["aps"]?["alert"]?.stringValue?.hasSuffix("…") == true)
        #expect(try encode(notification, command: .enhanced).count == 45 + notification.payload.count)
    }

    @Test("a token that is not 32 bytes is refused locally, saying so")
    func tokenSize() throws {
        for hex in [String(repeating: "ab", count: 16), String(repeating: "ab", count: 100)] {
            #expect {
                try LegacyNotification(token: DeviceToken(hex), payload: Self.payload)
            } throws: { error in
                let error = error as? LegacyError
                return error?.code == .invalidToken && error?.message.contains("32-byte tokens") == true
            }
        }
        #expect(throws: LegacyError.self) { try LegacyNotification(token: Self.token, payload: Self.payload, priority: .low) }
    }

    @Test("endpoints parse HOST:PORT and [v6]:PORT, and say what is wrong otherwise")
    func endpoints() throws {
        #expect(try LegacyEndpoint(parsing: "gateway.push.apple.com:2195") == .productionGateway)
        #expect(try LegacyEndpoint(parsing: "[::1]:2195") == LegacyEndpoint(host: "::1", port: 2195))
        #expect(LegacyEndpoint(host: "::1", port: 2196).description == "[::1]:2196")
        for bad in ["gateway.push.apple.com", ":2195", "host:0", "host:http", "::1:2195", "[::1]2195"] {
            #expect(throws: LegacyError.self, "\(bad)") { try LegacyEndpoint(parsing: bad) }
        }
    }
}
