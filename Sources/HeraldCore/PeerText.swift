/// Text that came from the other end of a connection (an error reason, GOAWAY debug data, a
/// header value), made safe to print or log: controls (C0, DEL, C1), line and paragraph
/// separators and bidirectional overrides are written as `\u{…}` escapes, invalid UTF-8 becomes
/// U+FFFD, and it is cut at `limit` characters. Nothing a server sends can then move the cursor,
/// recolour a terminal or forge a line of output.
package struct PeerText: Sendable, Hashable, CustomStringConvertible {
    package let description: String

    package init(_ bytes: some Collection<UInt8>, limit: Int = 256) {
        self.init(String(decoding: bytes, as: UTF8.self), limit: limit)
    }

    package init(_ text: some StringProtocol, limit: Int = 256) {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count >= limit {
                result += "…"
                break
            }
            if Self.isUnsafe(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
            count += 1
        }
        description = result
    }

    /// Whether `text` would be changed by escaping (it holds something unsafe to print). A
    /// `String` overload beside the generic one: the client checks every answer's text, and a
    /// call from another module to a generic function is not specialised.
    package static func isSafe(_ text: String) -> Bool { checkSafe(text) }

    /// Whether `text` would be changed by escaping, for any string.
    package static func isSafe(_ text: some StringProtocol) -> Bool { checkSafe(text) }

    private static func checkSafe(_ text: some StringProtocol) -> Bool {
        // Printable ASCII, as nearly every header value and reason is: one pass over the bytes.
        !text.containsUTF8Byte(where: { $0 < 0x20 || $0 >= 0x7F }) || !text.unicodeScalars.contains(where: isUnsafe)
    }

    private static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F: true  // controls, escape sequences among them
        case 0x2028, 0x2029: true  // line and paragraph separators
        case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true  // bidirectional marks and overrides
        default: false
        }
    }
}
