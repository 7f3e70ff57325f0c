import Foundation
@testable import HeraldAPNS
import HeraldCore
import HeraldHTTP2
import NIOCore
import NIOHPACK
import Testing

/// A notification's fields written again from the connection's memo must be the bytes encoding
/// them would give: checked against an encoder that never keeps a memo, request by request, and
/// read back by NIOHPACK's decoder (an independent mirror of the table).
@Suite("Request header blocks")
struct RequestEncoderTests {
    static let token = try! DeviceToken(String(repeating: "ab", count: 32))

    static func notification(_ headers: PushHeaders) -> PushNotification {
        PushNotification(token: token, headers: headers, payload: EncodedPayload(unchecked: Array(#"{"aps":{}}"#.utf8)))
    }

    static func block(_ notification: PushNotification, memo: inout RequestEncoder.FieldsMemo, encoder: inout HPACKBlockEncoder) -> ByteBuffer {
        var block = ByteBuffer()
        encoder.beginBlock(into: &block)
        RequestEncoder.writeFields(
            for: notification, authority: "api.push.apple.com", authorization: nil, memo: &memo, encoder: &encoder, into: &block)
        return block
    }

    @Test("fields written from the memo are the bytes encoding gives, as the table fills, changes and shrinks")
    func memoMatchesEncoding() throws {
        let broadcast = PushHeaders(
            pushType: .alert, topic: "com.example.app", priority: .immediate, expiration: .at(Date(timeIntervalSince1970: 1_900_000_000)),
            collapseID: "6f1c2a9e-3b7d-4c1e-9a53-0d2f8e4b7c61")
        let other = PushHeaders(pushType: .background, topic: "com.example.app", priority: .throttled)
        let withID = PushHeaders(pushType: .alert, topic: "com.example.app", apnsID: UUID())
        // Repeats (the memo in use), a change and back, an apns-id of its own, a topic of each
        // request's own that fills the table until it evicts, and a table the peer shrinks.
        var sequence: [PushHeaders] = Array(repeating: broadcast, count: 4) + [other, other, broadcast, broadcast, withID, broadcast, broadcast]
        for n in 0..<80 { sequence.append(PushHeaders(pushType: .alert, topic: "com.example.app\(n)." + String(repeating: "x", count: 40))) }
        sequence += Array(repeating: broadcast, count: 3)

        var memo = RequestEncoder.FieldsMemo()
        var kept = HPACKBlockEncoder()
        var plain = HPACKBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var written = 0
        for (position, headers) in sequence.enumerated() {
            if position == sequence.count - 2 {
                kept.peerAllowsTableSize(256)
                plain.peerAllowsTableSize(256)
            }
            let before = memo
            var block = Self.block(Self.notification(headers), memo: &memo, encoder: &kept)
            var fresh = RequestEncoder.FieldsMemo()
            let expected = Self.block(Self.notification(headers), memo: &fresh, encoder: &plain)
            #expect(block == expected, "request \(position)")
            if before.headers == headers, before.bytes == memo.bytes { written += 1 }
            let decoded = try decoder.decodeHeaders(from: &block)
            let fields = decoded.map { "\($0.name): \($0.value)" }.filter { $0.hasPrefix("apns-") }
            #expect(fields == headers.fields.map { "\($0.name): \($0.value)" }, "request \(position)")
        }
        // The memo was in use: the broadcast's repeats after the first two (which fill the table).
        #expect(written >= 4)
    }
}
