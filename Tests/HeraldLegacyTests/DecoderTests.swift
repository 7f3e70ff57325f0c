import Foundation
import HeraldCore
@testable import HeraldLegacy
import NIOCore
import NIOEmbedded
import NIOTestUtils
import Testing

@Suite("Legacy decoders: any split of the bytes, and never a crash")
struct DecoderTests {
    func buffer(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }

    @Test("error responses decode the same whatever the split (ByteToMessageDecoderVerifier)")
    func errorResponsesSplit() throws {
        let responses = [
            LegacyErrorResponse(status: .invalidToken, identifier: 1),
            LegacyErrorResponse(status: .shutdown, identifier: 0xFFFF_FFFF),
            LegacyErrorResponse(status: LegacyStatus(rawValue: 42), identifier: 77),
        ]
        var all = ByteBuffer()
        for response in responses { response.write(into: &all) }
        try ByteToMessageDecoderVerifier.verifyDecoder(
            inputOutputPairs: [(all, responses), (buffer([8, 7, 0, 0, 0, 9]), [LegacyErrorResponse(status: .invalidPayloadSize, identifier: 9)])],
            decoderFactory: { LegacyErrorResponseDecoder() }
        )
    }

    @Test("feedback tuples decode the same whatever the split, tokens of any length")
    func feedbackSplit() throws {
        let tuples = [
            FeedbackTuple(timestamp: Date(timeIntervalSince1970: 1_600_000_000), token: legacyToken(1)),
            FeedbackTuple(timestamp: Date(timeIntervalSince1970: 1_700_000_000), token: try DeviceToken(bytes: Array(repeating: 0xAB, count: 100))),
            FeedbackTuple(timestamp: Date(timeIntervalSince1970: 0), token: legacyToken(3)),
        ]
        var all = ByteBuffer()
        for tuple in tuples { tuple.write(into: &all) }
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: [(all, tuples)], decoderFactory: { FeedbackTupleDecoder() })
    }

    @Test("a feedback tuple whose token is longer than DeviceToken.maximumByteCount is a protocol error, not a crash")
    func feedbackTokenTooLong() throws {
        var bytes = buffer([0, 0, 0, 1, 0, 101] + Array(repeating: 0xAB, count: 101))
        #expect {
            try FeedbackTupleDecoder.next(&bytes)
        } throws: { ($0 as? LegacyError)?.code == .protocolError }
    }

    @Test("notification frames of all three commands decode the same whatever the split")
    func framesSplit() throws {
        var all = ByteBuffer()
        var expected: [LegacyFrameParser.Parsed] = []
        for (index, command) in LegacyCommand.allCases.enumerated() {
            let notification = try LegacyNotification(
                token: legacyToken(index), payload: legacyNotification(index).payload,
                expiration: .at(Date(timeIntervalSince1970: 1_600_000_000)), priority: command == .frame ? .throttled : nil
            )
            try LegacyEncoder.write(notification, identifier: UInt32(100 + index), command: command, into: &all)
            expected.append(.frame(LegacyFrame(
                command: command, identifier: command == .simple ? nil : UInt32(100 + index), token: notification.token.bytes,
                payload: notification.payload.bytes, expiry: command == .simple ? nil : 1_600_000_000, priority: command == .frame ? 5 : nil
            )))
        }
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: [(all, expected)], decoderFactory: { LegacyFrameDecoder() })
    }

    @Test("the error-response decoder refuses anything but command 8 with a protocol error")
    func responseProtocolError() throws {
        var bytes = buffer([2, 0, 0, 0, 0, 1])
        #expect {
            try LegacyErrorResponseDecoder.next(&bytes)
        } throws: { ($0 as? LegacyError)?.code == .protocolError }
    }

    @Test("a feedback stream that ends inside a tuple is an error, not a silent truncation")
    func feedbackTruncated() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(FeedbackTupleDecoder()))
        var bytes = ByteBuffer()
        FeedbackTuple(timestamp: Date(timeIntervalSince1970: 5), token: legacyToken(9)).write(into: &bytes)
        bytes.writeBytes([0, 0, 0, 1, 0, 32, 1, 2])
        try channel.writeInbound(bytes)
        #expect(try channel.readInbound(as: FeedbackTuple.self)?.token == legacyToken(9))
        #expect(throws: LegacyError.self) { try channel.finish() }
    }

    @Test("the gateway's parser answers each invalid notification with the status of §4.4")
    func parserStatuses() throws {
        let token = Array(repeating: UInt8(0xAA), count: 32)
        let payload = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        func enhanced(id: UInt32 = 5, token: [UInt8], payload: [UInt8]) -> [UInt8] {
            var b = ByteBuffer()
            b.writeInteger(UInt8(1)); b.writeInteger(id); b.writeInteger(UInt32(0))
            b.writeInteger(UInt16(token.count)); b.writeBytes(token); b.writeInteger(UInt16(payload.count)); b.writeBytes(payload)
            return b.bytes
        }
        func frame(_ items: [(UInt8, [UInt8])]) -> [UInt8] {
            var body = ByteBuffer()
            for (id, data) in items { body.writeInteger(id); body.writeInteger(UInt16(data.count)); body.writeBytes(data) }
            var b = ByteBuffer()
            b.writeInteger(UInt8(2)); b.writeInteger(UInt32(body.readableBytes)); b.writeBuffer(&body)
            return b.bytes
        }
        let id: [UInt8] = [0, 0, 0, 9]
        let cases: [([UInt8], LegacyErrorResponse)] = [
            (enhanced(token: [], payload: payload), .init(status: .missingDeviceToken, identifier: 5)),
            (enhanced(token: Array(token[0..<31]), payload: payload), .init(status: .invalidTokenSize, identifier: 5)),
            (enhanced(token: token, payload: []), .init(status: .missingPayload, identifier: 5)),
            (enhanced(token: token, payload: Array(repeating: 0x20, count: 257)), .init(status: .invalidPayloadSize, identifier: 5)),
            ([0, 0, 0] + [0, 2] + Array(#"{}"#.utf8), .init(status: .missingDeviceToken, identifier: 0)),
            ([9, 1, 2, 3], .init(status: .protocolError, identifier: 0)),
            (frame([(2, payload), (3, id)]), .init(status: .missingDeviceToken, identifier: 9)),
            (frame([(1, Array(token[0..<16])), (2, payload), (3, id)]), .init(status: .invalidTokenSize, identifier: 9)),
            (frame([(1, token), (3, id)]), .init(status: .missingPayload, identifier: 9)),
            (frame([(1, token), (2, Array(repeating: 0x20, count: 2049)), (3, id)]), .init(status: .invalidPayloadSize, identifier: 9)),
            (frame([(1, token), (2, payload), (3, id), (9, [1])]), .init(status: .protocolError, identifier: 9)),
            (frame([(1, token), (1, token), (2, payload), (3, id)]), .init(status: .protocolError, identifier: 0)),
            (frame([(1, token), (2, payload), (3, id), (5, [7])]), .init(status: .protocolError, identifier: 9)),
            (frame([(1, token), (2, payload), (3, [0, 9])]), .init(status: .protocolError, identifier: 0)),
            ([2, 0xFF, 0xFF, 0xFF, 0xFF], .init(status: .protocolError, identifier: 0)),
        ]
        for (bytes, expected) in cases {
            var buffer = ByteBuffer(bytes: bytes)
            #expect(LegacyFrameParser.next(&buffer) == .invalid(expected), "\(bytes.prefix(12))")
        }
    }

    @Test("an invalid command 1 is judged from its header, before the rest arrives")
    func earlyJudgement() {
        var header = ByteBuffer(bytes: [1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 16])
        #expect(LegacyFrameParser.next(&header) == .invalid(.init(status: .invalidTokenSize, identifier: 3)))
        var partial = ByteBuffer(bytes: [1, 0, 0, 0, 3, 0, 0, 0])
        #expect(LegacyFrameParser.next(&partial) == nil)
        #expect(partial.readableBytes == 8)
    }

    @Test("random bytes, split at random, never crash any decoder (seeded, 3,000 rounds)")
    func randomBytes() throws {
        var random = SplitMix64(seed: 0x4C45_4741_4359)
        for round in 0..<3_000 {
            let count = Int.random(in: 0...300, using: &random)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            // Bias some rounds towards plausible headers so the deeper paths run too.
            if round % 3 == 0, !bytes.isEmpty { bytes[0] = UInt8(round % 4 == 0 ? 8 : round % 9) }
            let cut = count == 0 ? 0 : Int.random(in: 0...count, using: &random)
            for decoder in 0..<3 {
                let channel: EmbeddedChannel
                switch decoder {
                case 0: channel = EmbeddedChannel(handler: ByteToMessageHandler(LegacyErrorResponseDecoder()))
                case 1: channel = EmbeddedChannel(handler: ByteToMessageHandler(FeedbackTupleDecoder()))
                default: channel = EmbeddedChannel(handler: ByteToMessageHandler(LegacyFrameDecoder()))
                }
                // Errors are expected; crashes and hangs are not.
                _ = try? channel.writeInbound(ByteBuffer(bytes: bytes[0..<cut]))
                _ = try? channel.writeInbound(ByteBuffer(bytes: bytes[cut...]))
                _ = try? channel.finish()
            }
            var whole = ByteBuffer(bytes: bytes)
            var steps = 0
            while steps < 1_000, let parsed = LegacyFrameParser.next(&whole) {
                steps += 1
                if case .invalid = parsed { break }
            }
        }
    }
}
