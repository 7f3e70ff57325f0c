import Foundation
import HeraldHTTP2
import NIOCore
import NIOHPACK
import Testing

/// Blocks written by Herald's encoder, read by NIOHPACK's decoder: an independent check that
/// both keep the same dynamic table (RFC 7541).
@Suite("HPACK header blocks")
struct HPACKBlockEncoderTests {
    static func request(_ encoder: inout HPACKBlockEncoder, path: String, id: String, jwt: String) -> ByteBuffer {
        var block = ByteBuffer()
        encoder.beginBlock(into: &block)
        encoder.indexed(HPACKBlockEncoder.Static.methodPOST, into: &block)
        encoder.indexed(HPACKBlockEncoder.Static.schemeHTTPS, into: &block)
        encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.path, value: path, into: &block)
        encoder.indexing(name: ":authority", value: "api.push.apple.com:443", staticNameIndex: HPACKBlockEncoder.Static.authority, into: &block)
        encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.authorization, value: "bearer " + jwt, into: &block)
        encoder.indexing(name: "apns-topic", value: "com.example.app", into: &block)
        encoder.indexing(name: "apns-push-type", value: "alert", into: &block)
        encoder.literal(name: "apns-id", value: id, into: &block)
        return block
    }

    @Test("every :status decodes to its code; the ones in the static table take one byte")
    func statuses() throws {
        let encoder = HPACKBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        for code in [200, 201, 204, 400, 403, 404, 405, 410, 413, 429, 500, 503] {
            var block = ByteBuffer()
            encoder.status(code, into: &block)
            let size = block.readableBytes
            let headers = try decoder.decodeHeaders(from: &block)
            #expect(headers.map { "\($0.name): \($0.value)" } == [":status: \(code)"])
            #expect((size == 1) == [200, 204, 400, 404, 500].contains(code), "\(code): \(size) bytes")
        }
    }

    @Test("requests decode to the same headers, and repeated fields shrink to one byte")
    func roundTrip() throws {
        var encoder = HPACKBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var sizes: [Int] = []
        for n in 0..<50 {
            let path = "/3/device/" + String(repeating: String(n % 10), count: 64)
            let id = "00000000-0000-0000-0000-" + String(String(n).reversed()).padding(toLength: 12, withPad: "0", startingAt: 0)
            var block = Self.request(&encoder, path: path, id: id, jwt: "eyJ.header.sig\(n / 10)")
            sizes.append(block.readableBytes)
            let headers = try decoder.decodeHeaders(from: &block)
            #expect(headers.map { "\($0.name): \($0.value)" } == [
                ":method: POST", ":scheme: https", ":path: \(path)", ":authority: api.push.apple.com:443",
                "authorization: bearer eyJ.header.sig\(n / 10)", "apns-topic: com.example.app", "apns-push-type: alert", "apns-id: \(id)",
            ])
        }
        // After the first request, :authority, apns-topic and apns-push-type are one byte each.
        #expect(sizes[1] < sizes[0] - 40)
        #expect(Set(sizes.dropFirst()).count == 1)
    }

    @Test("path and authorization are never indexed; indexed names are, as APNs asks (apns-spec §1.3)")
    func representations() throws {
        var encoder = HPACKBlockEncoder()
        var block = Self.request(&encoder, path: "/3/device/ab", id: "i", jwt: "j")
        // :path: literal without indexing, static name 4 → first byte 0x04.
        let bytes = Array(block.readableBytesView)
        #expect(bytes[0] == 0x83 && bytes[1] == 0x87)
        #expect(bytes[2] == 0x04)
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let headers = try decoder.decodeHeaders(from: &block)
        #expect(headers.first(name: ":path") == "/3/device/ab")
        // The same request again: :path and authorization are still literals (never from the table).
        var again = Self.request(&encoder, path: "/3/device/ab", id: "i", jwt: "j")
        let repeated = Array(again.readableBytesView)
        #expect(repeated[2] == 0x04)
        #expect(repeated.count > "/3/device/ab".utf8.count + "bearer j".utf8.count)
        _ = try decoder.decodeHeaders(from: &again)
    }

    @Test("when the peer shrinks its table, the encoder evicts, announces the new size, and stays in step")
    func tableSizeUpdate() throws {
        var encoder = HPACKBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var first = Self.request(&encoder, path: "/3/device/aa", id: "1", jwt: "x")
        _ = try decoder.decodeHeaders(from: &first)
        encoder.peerAllowsTableSize(64)
        decoder.maxDynamicTableLength = 64
        for n in 0..<5 {
            var block = Self.request(&encoder, path: "/3/device/bb", id: "\(n)", jwt: "y")
            let headers = try decoder.decodeHeaders(from: &block)
            #expect(headers.first(name: "apns-topic") == "com.example.app")
            #expect(headers.first(name: "apns-id") == "\(n)")
        }
        encoder.peerAllowsTableSize(0)
        decoder.maxDynamicTableLength = 0
        var empty = Self.request(&encoder, path: "/3/device/cc", id: "z", jwt: "w")
        #expect(try decoder.decodeHeaders(from: &empty).first(name: "apns-push-type") == "alert")
        #expect(decoder.allowedDynamicTableLength == 0)
    }

    @Test("integers use the prefix and continuation bytes of RFC 7541 §5.1")
    func integers() {
        var buffer = ByteBuffer()
        HPACKBlockEncoder.writeInteger(10, prefixBits: 5, pattern: 0, into: &buffer)
        HPACKBlockEncoder.writeInteger(1337, prefixBits: 5, pattern: 0, into: &buffer)
        HPACKBlockEncoder.writeInteger(42, prefixBits: 8, pattern: 0, into: &buffer)
        #expect(Array(buffer.readableBytesView) == [10, 31, 154, 10, 42])  // the RFC's own examples (C.1)
    }
}
