import HeraldHTTP2
import NIOCore
import NIOHPACK
import Testing

/// Seeded random frame sequences against both roles of ``HTTP2Connection``, fed in reads of random
/// sizes, with the owner sending answers in between. After every read: no trap, and everything the
/// peer can grow within its bound. Reproducible: a failure names its seed.
@Suite("HTTP/2 fuzz")
struct FuzzTests {
    /// SplitMix64: small, fast, and the same everywhere.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(bound, 1))) }
        mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    }

    static let maximumStreams = 20

    /// The bound on what the connection may hold for what the peer sent: one incomplete frame and
    /// one read (rounded up to a power of two), and one header block being gathered.
    static func retentionBound(_ limits: HTTP2Connection.Limits) -> Int {
        4 * (16_384 + 9) + 2 * limits.maximumHeaderBlockSize
    }

    @Test("3,000 random sequences per role: no trap, every table and buffer within its bound")
    func randomSequences() {
        for seed in 0..<UInt64(6000) {
            run(seed: seed, frames: 40)
        }
    }

    @Test("long runs of ignored frames in reads that never end on a frame boundary: the parser stays bounded")
    func longMisalignedRuns() {
        for seed in 0..<UInt64(20) {
            run(seed: 1_000_000 + seed, frames: 3000, ignorableOnly: true)
        }
    }

    func run(seed: UInt64, frames count: Int, ignorableOnly: Bool = false) {
        var random = Random(state: seed)
        let role: HTTP2Connection.Role = seed % 2 == 0 ? .server : .client
        var limits = HTTP2Connection.Limits()
        limits.recentlyResetStreams = 8
        if ignorableOnly || random.chance(50) { limits.controlFrames = HTTP2RateLimit(1_000_000, per: .seconds(1)) }
        var peer: HTTP2TestPeer
        if role == .server {
            peer = .server(maxConcurrentStreams: Self.maximumStreams, limits: limits)
        } else {
            peer = .client(serverSettings: [(.maxConcurrentStreams, Self.maximumStreams), (.initialWindowSize, random.below(3) == 0 ? 0 : 65_535)], limits: limits)
        }
        var bytes = ByteBuffer()
        var clientStream: HTTP2StreamNumber = 1
        if ignorableOnly {
            // The whole stream at once, cut into reads at random: they almost never end on a frame.
            for _ in 0..<count { writeIgnorable(&bytes, &random) }
            while bytes.readableBytes > 0 {
                let size = min(bytes.readableBytes, 1 + random.below(40_000))
                var read = ByteBufferAllocator().buffer(capacity: size)
                read.writeImmutableBuffer(bytes.readSlice(length: size)!)
                peer.feed(read, writable: random.chance(90))
                check(peer, limits: limits, seed: seed)
                if peer.error != nil { return }
            }
            return
        }
        for _ in 0..<count {
            write(&bytes, &random, &peer, role: role)
            // The owner acts now and then: opens streams (client), answers or resets them.
            if random.chance(20) {
                act(&peer, &random, role: role, nextClientStream: &clientStream)
            }
            // Feed what is written so far in reads of random sizes, often ending mid-frame.
            while bytes.readableBytes > random.below(64) {
                let size = min(bytes.readableBytes, 1 + random.below(300))
                var read = ByteBufferAllocator().buffer(capacity: size)
                read.writeImmutableBuffer(bytes.readSlice(length: size)!)
                peer.feed(read, writable: random.chance(90))
                check(peer, limits: limits, seed: seed)
                if peer.error != nil { return }
            }
            bytes.discardReadBytes()
        }
    }

    func check(_ peer: HTTP2TestPeer, limits: HTTP2Connection.Limits, seed: UInt64) {
        let connection = peer.connection
        #expect(connection.retainedBytes <= Self.retentionBound(limits), "seed \(seed): retained \(connection.retainedBytes) bytes")
        #expect(connection.peerStreamCount <= Self.maximumStreams, "seed \(seed): \(connection.peerStreamCount) peer streams")
        #expect(connection.openStreamCount <= 2 * Self.maximumStreams + 2, "seed \(seed): \(connection.openStreamCount) streams")
        #expect(connection.recentlyResetCount <= limits.recentlyResetStreams, "seed \(seed)")
        #expect(connection.connectionSendWindow <= http2MaximumWindow, "seed \(seed)")
        if let error = peer.error {
            #expect(error.code.rawValue <= HTTP2ErrorCode.http11Required.rawValue, "seed \(seed): \(error)")
        }
    }

    /// Frames that ask nothing of the owner: the parser and the limits are what is exercised.
    func writeIgnorable(_ bytes: inout ByteBuffer, _ random: inout Random) {
        switch random.below(3) {
        case 0:
            bytes.writeHTTP2Ping(random.next(), ack: true)
        case 1:
            bytes.writeHTTP2WindowUpdate(streamID: 0, increment: 1)
        default:
            let length = random.below(16_384)
            bytes.writeHTTP2FrameHeader(length: length, type: .data, flags: 0, streamID: 0)
            bytes.setInteger(UInt8(0xA0), at: bytes.writerIndex - 6)  // an unknown frame type
            bytes.writeRepeatingByte(0x5A, count: length)
        }
    }

    func write(_ bytes: inout ByteBuffer, _ random: inout Random, _ peer: inout HTTP2TestPeer, role: HTTP2Connection.Role) {
        let stream: HTTP2StreamNumber = [0, 1, 2, 3, 5, 7, 9, 11, 13, 101, 0x7FFF_FFFF][random.below(11)]
        let flags = UInt8(truncatingIfNeeded: random.next()) & (random.chance(50) ? 0x2D : 0xFF)
        switch random.below(12) {
        case 0, 1:
            // A well-formed head, sometimes with a malformation.
            var fields = role == .server ? HTTP2TestPeer.request() : [(":status", ["100", "200", "410", "101"][random.below(4)])]
            if random.chance(30) { fields.append([("X-Up", "1"), ("connection", "x"), (":bad", "1"), ("content-length", "3"), ("te", "gzip")][random.below(5)]) }
            let block = peer.block(fields)
            let split = random.chance(30) ? random.below(block.readableBytes + 1) : block.readableBytes
            let endHeaders = split == block.readableBytes
            bytes.writeHTTP2FrameHeader(
                length: split, type: .headers, flags: (endHeaders ? HTTP2Flag.endHeaders : 0) | (random.chance(50) ? HTTP2Flag.endStream : 0), streamID: stream
            )
            bytes.writeImmutableBuffer(block.getSlice(at: block.readerIndex, length: split)!)
            if !endHeaders, random.chance(80) {
                bytes.writeHTTP2FrameHeader(length: block.readableBytes - split, type: .continuation, flags: HTTP2Flag.endHeaders, streamID: stream)
                bytes.writeImmutableBuffer(block.getSlice(at: block.readerIndex + split, length: block.readableBytes - split)!)
            }
        case 2, 3:
            let length = random.chance(80) ? random.below(100) : random.below(20_000)
            bytes.writeHTTP2FrameHeader(length: length, type: .data, flags: flags & 0x09, streamID: stream)
            if flags & 0x08 != 0, length > 0 { bytes.writeInteger(UInt8(truncatingIfNeeded: random.below(length + 10))); bytes.writeRepeatingByte(1, count: length - 1) } else { bytes.writeRepeatingByte(1, count: length) }
        case 4:
            bytes.writeHTTP2WindowUpdate(streamID: stream, increment: random.chance(10) ? 0 : random.below(1 << 31))
        case 5:
            bytes.writeHTTP2RstStream(streamID: stream, code: HTTP2ErrorCode(UInt32(random.below(14))))
        case 6:
            var settings: [(HTTP2SettingID, Int)] = []
            for _ in 0..<random.below(4) {
                let id = HTTP2SettingID(rawValue: UInt16(1 + random.below(6)))!
                settings.append((id, [0, 1, 100, 16_384, 65_535, 1 << 20, 1 << 31, Int(UInt32.max)][random.below(8)]))
            }
            if random.chance(20) { bytes.writeHTTP2SettingsAck() } else { bytes.writeHTTP2Settings(settings) }
        case 7:
            bytes.writeHTTP2Ping(random.next(), ack: random.chance(50))
        case 8:
            bytes.writeHTTP2FrameHeader(length: random.chance(90) ? 5 : random.below(9), type: .priority, flags: 0, streamID: stream)
            bytes.writeInteger(UInt32(random.chance(20) ? stream : HTTP2StreamNumber(random.below(10))))
            bytes.writeInteger(UInt8(random.below(256)))
        case 9:
            bytes.writeHTTP2GoAway(lastStreamID: HTTP2StreamNumber(random.below(20)), code: .noError, debugData: [UInt8](repeating: 0x1B, count: random.below(30)))
        case 10:
            let length = random.below(64)
            bytes.writeHTTP2FrameHeader(length: length, type: .continuation, flags: flags & HTTP2Flag.endHeaders, streamID: stream)
            bytes.writeRepeatingByte(0x82, count: length)
        default:
            // Noise: a frame header of any type, flags and length, then random bytes.
            let length = random.below(50)
            bytes.writeInteger(UInt8(0))
            bytes.writeInteger(UInt16(length))
            bytes.writeInteger(UInt8(random.below(16)))
            bytes.writeInteger(flags)
            bytes.writeInteger(UInt32(truncatingIfNeeded: random.next()))
            for _ in 0..<length { bytes.writeInteger(UInt8(truncatingIfNeeded: random.next())) }
        }
    }

    func act(_ peer: inout HTTP2TestPeer, _ random: inout Random, role: HTTP2Connection.Role, nextClientStream: inout HTTP2StreamNumber) {
        var output = ByteBuffer()
        let stream: HTTP2StreamNumber
        if role == .client && random.chance(60) && peer.connection.openStreamCount < Self.maximumStreams {
            stream = nextClientStream
            nextClientStream += 2
        } else {
            stream = HTTP2StreamNumber(1 + 2 * random.below(8))
        }
        switch random.below(4) {
        case 0, 1:
            let endStream = random.chance(30)
            peer.connection.writeHeaders(streamID: stream, endStream: endStream, into: &output) { encoder, block in
                encoder.indexed(role == .server ? HPACKBlockEncoder.Static.status200 : HPACKBlockEncoder.Static.methodPOST, into: &block)
                if random.chance(5) { encoder.literal(name: "x-large", value: String(repeating: "v", count: 20_000), into: &block) }
            }
            if !endStream { peer.connection.writeBody(streamID: stream, [UInt8](repeating: 7, count: random.below(70_000)), into: &output) }
        case 2:
            peer.connection.resetStream(stream, code: .cancel, into: &output)
        default:
            peer.connection.writeGoAway(code: .noError, into: &output)
        }
        peer.collect(output)
    }
}
