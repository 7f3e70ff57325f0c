/// An IPv4 or IPv6 address as its bytes, and whether it is one of the internet's public
/// addresses: what decides whether Herald may send a request there on a stranger's word (a
/// browser's push endpoint), since the others reach the operator's own network.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), in network order.
    public let bytes: [UInt8]

    /// An address from its 4 or 16 bytes; `nil` for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// An address from its text: dotted IPv4 (`10.1.2.3`) or IPv6 (`::1`, `[fe80::1]`, with an
    /// embedded IPv4 tail). Also the forms C's `inet_aton` and so `getaddrinfo` read as IPv4
    /// (`2130706433`, `0x7f.1`, `0177.0.0.1`), so a host that a resolver would take for an
    /// address is never mistaken for a name. `nil`: not an address.
    public init?(_ text: some StringProtocol) {
        var text = Substring(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if text.contains(":") {
            guard let bytes = Self.parseIPv6(text) else { return nil }
            self.bytes = bytes
        } else {
            guard let bytes = Self.parseIPv4(text) else { return nil }
            self.bytes = bytes
        }
    }

    public var isIPv4: Bool { bytes.count == 4 }

    /// The IPv4 address an IPv6 one stands for, where it embeds one: IPv4-mapped
    /// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, deprecated), NAT64 (`64:ff9b::/96`,
    /// RFC 6052) and 6to4 (`2002::/16`, RFC 3056).
    public var embeddedIPv4: IPAddress? {
        guard bytes.count == 16 else { return nil }
        let head = bytes.prefix(12)
        if head.elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) || (head.allSatisfy { $0 == 0 } && bytes[12...].contains { $0 != 0 }) {
            return IPAddress(bytes: Array(bytes[12...]))
        }
        if head.elementsEqual([0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]) { return IPAddress(bytes: Array(bytes[12...])) }
        if bytes[0] == 0x20, bytes[1] == 0x02 { return IPAddress(bytes: Array(bytes[2..<6])) }
        return nil
    }

    /// What kind of network the address belongs to, or `nil` for a public (global unicast) one.
    /// IPv4 by the IANA special-purpose registry (RFC 6890): unspecified and "this network"
    /// (0/8), private (10/8, 172.16/12, 192.168/16, RFC 1918), shared (100.64/10, RFC 6598),
    /// loopback (127/8), link-local (169.254/16, where cloud metadata services answer),
    /// IETF protocol assignments (192.0.0/24), documentation (192.0.2/24, 198.51.100/24,
    /// 203.0.113/24), benchmarking (198.18/15), multicast (224/4), reserved and broadcast
    /// (240/4). IPv6 (RFC 4291, RFC 4193): unspecified, loopback, unique local (fc00::/7),
    /// link-local (fe80::/10), site-local (fec0::/10), multicast (ff00::/8), documentation
    /// (2001:db8::/32), and an embedded IPv4 address's kind.
    public var restrictedKind: String? {
        if bytes.count == 4 {
            let (a, b, c) = (bytes[0], bytes[1], bytes[2])
            switch a {
            case 0: return "unspecified"
            case 10: return "private"
            case 100 where (64...127).contains(b): return "shared"
            case 127: return "loopback"
            case 169 where b == 254: return "link-local"
            case 172 where (16...31).contains(b): return "private"
            case 192 where b == 168: return "private"
            case 192 where b == 0 && c == 0: return "reserved"
            case 192 where b == 0 && c == 2, 198 where b == 51 && c == 100, 203 where b == 0 && c == 113: return "documentation"
            case 198 where b == 18 || b == 19: return "benchmarking"
            case 224...239: return "multicast"
            case 240...255: return "reserved"
            default: return nil
            }
        }
        if bytes.allSatisfy({ $0 == 0 }) { return "unspecified" }
        if bytes.prefix(15).allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return "loopback" }
        if let v4 = embeddedIPv4 { return v4.restrictedKind }
        switch bytes[0] {
        case 0xFC, 0xFD: return "unique local"
        case 0xFE where bytes[1] & 0xC0 == 0x80: return "link-local"
        case 0xFE where bytes[1] & 0xC0 == 0xC0: return "site-local"
        case 0xFF: return "multicast"
        case 0x20 where bytes[1] == 0x01 && bytes[2] == 0x0D && bytes[3] == 0xB8: return "documentation"
        default: break
        }
        // Anything but global unicast (2000::/3) is reserved.
        return bytes[0] & 0xE0 == 0x20 ? nil : "reserved"
    }

    public var description: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }

    /// `inet_aton`'s forms: one to four parts, each decimal, octal (leading 0) or hex (0x); the
    /// last part fills the bytes the others leave.
    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt32] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 12 else { return nil }
            let value: UInt32?
            if part.lowercased().hasPrefix("0x") {
                value = part.count == 2 ? 0 : UInt32(part.dropFirst(2), radix: 16)
            } else if part.hasPrefix("0"), part.count > 1 {
                value = UInt32(part.dropFirst(), radix: 8)
            } else {
                value = UInt32(part, radix: 10)
            }
            guard let value else { return nil }
            values.append(value)
        }
        let last = values.removeLast()
        guard values.allSatisfy({ $0 <= 255 }) else { return nil }
        let lastBits = UInt32(8 * (4 - values.count))
        guard lastBits == 32 || last < (UInt32(1) << lastBits) else { return nil }
        var bytes = values.map(UInt8.init)
        for shift in stride(from: Int(lastBits) - 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: last >> UInt32(shift))) }
        return bytes
    }

    /// RFC 4291 §2.2 text: eight groups of hex, one `::`, an IPv4 tail; a zone (`%eth0`) is dropped.
    private static func parseIPv6(_ full: Substring) -> [UInt8]? {
        let text = full.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false).first ?? full
        guard text.count <= 45 else { return nil }
        var halves: [Substring] = []
        var start = text.startIndex
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(after: index)
            if text[index] == ":", next < text.endIndex, text[next] == ":" {
                halves.append(text[start..<index])
                start = text.index(after: next)
                index = start
            } else {
                index = next
            }
        }
        halves.append(text[start...])
        guard halves.count <= 2 else { return nil }
        func groups(_ part: Substring, allowTail: Bool) -> [UInt8]? {
            if part.isEmpty { return [] }
            var bytes: [UInt8] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, field) in fields.enumerated() {
                if allowTail, index == fields.count - 1, field.contains(".") {
                    guard field.split(separator: ".", omittingEmptySubsequences: false).count == 4,
                        let v4 = parseIPv4(field), field.allSatisfy({ $0.isNumber || $0 == "." })
                    else { return nil }
                    bytes += v4
                    continue
                }
                guard (1...4).contains(field.count), let value = UInt16(field, radix: 16) else { return nil }
                bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return bytes
        }
        if halves.count == 1 {
            guard let bytes = groups(halves[0], allowTail: true), bytes.count == 16 else { return nil }
            return bytes
        }
        guard let head = groups(halves[0], allowTail: false), let tail = groups(halves[1], allowTail: true), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
