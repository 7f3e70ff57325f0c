import NIOHPACK

/// The checks RFC 9113 §8 makes on every header block, in one pass: a block that fails them is
/// malformed, and its stream ends with a PROTOCOL_ERROR stream error (§8.1.1).
enum HTTP2MessageValidation {
    /// What kind of block is checked.
    enum Kind {
        /// A request head (a server reads these).
        case request
        /// A response head (a client reads these).
        case response
        /// Trailers: the last block of a message.
        case trailers
    }

    /// A block that passed.
    struct Head {
        /// `content-length`, if the message declares one.
        var contentLength: Int?
        /// A 1xx response: more heads follow (RFC 9113 §8.1).
        var informational = false
    }

    /// Checks `headers` as a block of `kind`, returning what the connection needs to know, or
    /// why the block is malformed.
    static func validate(_ headers: HPACKHeaders, as kind: Kind) -> Result<Head, Malformed> {
        var head = Head()
        var seenRegular = false
        var method: Substring?
        var scheme = false
        var path = false
        var authority = false
        var status: Int?
        for (name, value, _) in headers {
            if let problem = problem(inName: name) { return .failure(Malformed(problem)) }
            if let problem = problem(inValue: value, of: name) { return .failure(Malformed(problem)) }
            if name.utf8.first == UInt8(ascii: ":") {
                // Pseudo-header fields (§8.3): only the defined ones, each once, before any other field.
                guard !seenRegular else { return .failure(Malformed("pseudo-header \(name) after a regular field")) }
                switch (kind, name) {
                case (.request, ":method"):
                    guard method == nil else { return .failure(Malformed("duplicate :method")) }
                    method = value[...]
                case (.request, ":scheme"):
                    guard !scheme else { return .failure(Malformed("duplicate :scheme")) }
                    scheme = true
                case (.request, ":path"):
                    guard !path else { return .failure(Malformed("duplicate :path")) }
                    guard !value.isEmpty else { return .failure(Malformed("empty :path")) }
                    path = true
                case (.request, ":authority"):
                    guard !authority else { return .failure(Malformed("duplicate :authority")) }
                    authority = true
                case (.response, ":status"):
                    guard status == nil else { return .failure(Malformed("duplicate :status")) }
                    guard value.utf8.count == 3, let code = Int(value), (100...999).contains(code) else {
                        return .failure(Malformed("invalid :status"))
                    }
                    status = code
                case (.trailers, _):
                    return .failure(Malformed("pseudo-header \(name) in trailers"))
                default:
                    return .failure(Malformed("pseudo-header \(name) is not allowed here"))
                }
                continue
            }
            seenRegular = true
            // Only names starting with c, k, p, t or u need a closer look (most start with "a").
            guard let first = name.utf8.first, first == 0x63 || first == 0x6B || first == 0x70 || first == 0x74 || first == 0x75 else { continue }
            switch name {
            case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
                // Connection-specific fields have no place in HTTP/2 (§8.2.2).
                return .failure(Malformed("connection-specific field \(name)"))
            case "te" where value != "trailers":
                return .failure(Malformed("te other than \"trailers\""))
            case "content-length":
                guard let length = Self.contentLength(value), head.contentLength == nil || head.contentLength == length else {
                    return .failure(Malformed("invalid content-length"))
                }
                head.contentLength = length
            default:
                break
            }
        }
        switch kind {
        case .request:
            guard let method else { return .failure(Malformed("no :method")) }
            if method == "CONNECT" {
                guard authority, !scheme, !path else { return .failure(Malformed("CONNECT needs :authority and no :scheme or :path")) }
            } else {
                guard scheme else { return .failure(Malformed("no :scheme")) }
                guard path else { return .failure(Malformed("no :path")) }
            }
        case .response:
            guard let status else { return .failure(Malformed("no :status")) }
            // 101 is not used in HTTP/2 (§8.6); other 1xx heads come before the final one.
            guard status != 101 else { return .failure(Malformed(":status 101 is not allowed in HTTP/2")) }
            head.informational = status < 200
            if status == 204 || status == 304 { head.contentLength = nil }
        case .trailers:
            break
        }
        return .success(head)
    }

    struct Malformed: Error, Equatable {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// Field names are lower-case tokens (§8.2.1): no upper case, controls, space, DEL or
    /// non-ASCII; a colon only to start a pseudo-header.
    private static func problem(inName name: String) -> String? {
        var name = name
        return name.withUTF8 { bytes -> String? in
            guard !bytes.isEmpty else { return "empty field name" }
            // One pass with one test per byte in the usual case: a lower-case letter, digit or '-'.
            for (index, byte) in bytes.enumerated() where !(byte >= 0x61 && byte <= 0x7A) {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): return "upper-case field name"
                case 0...0x20, 0x7F...0xFF: return "invalid character in a field name"
                case UInt8(ascii: ":") where index > 0: return "colon inside a field name"
                default: continue
                }
            }
            return nil
        }
    }

    /// Field values hold no NUL, CR or LF, and neither start nor end with whitespace (§8.2.1).
    private static func problem(inValue value: String, of name: String) -> String? {
        var value = value
        let problem = value.withUTF8 { bytes -> String? in
            guard let first = bytes.first, let last = bytes.last else { return nil }
            if first == 0x20 || first == 0x09 { return "starts with whitespace" }
            if last == 0x20 || last == 0x09 { return "ends with whitespace" }
            // Bytes under 0x0E are rare in values: only then is the byte looked at closely.
            for byte in bytes where byte < 0x0E && (byte == 0 || byte == 0x0A || byte == 0x0D) {
                return "holds NUL, CR or LF"
            }
            return nil
        }
        return problem.map { "field \(name) " + $0 }
    }

    /// A non-negative decimal of at most 15 digits.
    private static func contentLength(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 15, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }
}
