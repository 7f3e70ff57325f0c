/// A payload as it goes on the wire: the UTF-8 bytes of a JSON object.
///
/// Either encoded by Herald from a ``Payload`` or given by the caller as raw JSON, which passes
/// through byte for byte after a check that it is a JSON object.
public struct EncodedPayload: Sendable, Hashable, CustomStringConvertible {
    /// The bytes sent as the request body.
    public let bytes: [UInt8]

    /// Raw JSON from the caller, sent exactly as given once it is known to be a JSON object.
    public init(validating bytes: some Collection<UInt8>) throws(PayloadError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw PayloadError(.invalidJSON, "payload is not valid JSON: \(error)")
        }
        guard case .object = value else {
            throw PayloadError(.notAnObject, "payload must be a JSON object ({…}), got \(value.kindName)")
        }
        self.bytes = Array(bytes)
    }

    /// Raw JSON text from the caller; see ``init(validating:)-(Collection<UInt8>)``.
    public init(validating text: String) throws(PayloadError) {
        try self.init(validating: Array(text.utf8))
    }

    /// Bytes Herald wrote itself as a JSON object: not parsed again.
    package init(unchecked bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The size in bytes, as APNs counts it against the limit.
    public var count: Int { bytes.count }

    /// The payload as text.
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    /// The payload parsed back into a value.
    public var json: JSONValue {
        // Only valid JSON objects are ever stored.
        (try? JSONValue(parsing: bytes)) ?? .object([:])
    }

    /// Whether this is a pure background push: `{"aps":{"content-available":1}}`, with or without
    /// custom keys beside `aps` (the payload `background` is the default push type for).
    public var isContentAvailableOnly: Bool {
        guard let aps = json["aps"]?.objectValue, aps.count == 1 else { return false }
        return aps["content-available"]?.intValue == 1
    }

    /// The same JSON with the white space between tokens removed, keys in their original order:
    /// for printing one payload per line.
    public var compactBytes: [UInt8] {
        var output = [UInt8]()
        output.reserveCapacity(bytes.count)
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                output.append(byte)
            } else {
                switch byte {
                case 0x20, 0x09, 0x0A, 0x0D: continue
                case UInt8(ascii: "\""): inString = true
                default: break
                }
                output.append(byte)
            }
        }
        return output
    }

    /// Throws `PayloadTooLarge` when the payload is over `limit` bytes, or `PayloadEmpty` when it
    /// has no bytes (§1.7, §1.8).
    public func checkSize(limit: Int) throws(APNSError) {
        if bytes.isEmpty { throw APNSError(local: .payloadEmpty, "payload is empty") }
        if bytes.count > limit {
            throw APNSError(local: .payloadTooLarge, "payload is \(bytes.count) bytes; the limit is \(limit)")
        }
    }

    public var description: String { string }
}

extension JSONValue {
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
