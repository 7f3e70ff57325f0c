/// Why some bytes are not valid JSON, and where.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The offset of the offending byte, counted from 0.
    public var offset: Int
    /// What was wrong there.
    public var message: String

    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}

extension JSONValue {
    /// Parses one JSON value (RFC 8259, strict: no comments, no trailing commas, no NaN) surrounded
    /// by optional white space.
    public init(parsing bytes: some Collection<UInt8>) throws(JSONParseError) {
        let result: Result<JSONValue, JSONParseError> = Array(bytes).withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer)
            return Result { () throws(JSONParseError) in try parser.parseDocument() }
        }
        self = try result.get()
    }

    /// Parses JSON text.
    public init(parsing text: String) throws(JSONParseError) {
        try self.init(parsing: Array(text.utf8))
    }
}

/// A recursive-descent parser over UTF-8 bytes. Nesting is limited so hostile input cannot
/// exhaust the stack.
struct JSONParser {
    static let maximumDepth = 512

    private let input: UnsafeBufferPointer<UInt8>
    private var position = 0
    private var depth = 0

    init(_ input: UnsafeBufferPointer<UInt8>) {
        self.input = input
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if position < input.count { throw error("unexpected \(describe(input[position])) after the end of the value") }
        return value
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard position < input.count else { throw error("unexpected end of input, expected a value") }
        switch input[position] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case let byte: throw error("unexpected \(describe(byte)), expected a value")
        }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        position += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if peek(UInt8(ascii: "}")) {
            position += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard peek(UInt8(ascii: "\"")) else { throw error("expected a string key") }
            let keyStart = position
            let key = try parseString()
            skipWhitespace()
            guard peek(UInt8(ascii: ":")) else { throw error("expected ':' after key \"\(PeerText(key, limit: 64))\"") }
            position += 1
            skipWhitespace()
            // I-JSON (RFC 7493 §2.3): a name twice is an error, not "the last one wins": two
            // readers of the same document must not see different values.
            guard members[key] == nil else { throw JSONParseError(offset: keyStart, message: "duplicate key \"\(PeerText(key, limit: 64))\"") }
            members[key] = try parseValue()
            skipWhitespace()
            if peek(UInt8(ascii: ",")) {
                position += 1
                continue
            }
            if peek(UInt8(ascii: "}")) {
                position += 1
                depth -= 1
                return .object(members)
            }
            throw error("expected ',' or '}' in object")
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if peek(UInt8(ascii: "]")) {
            position += 1
            depth -= 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            if peek(UInt8(ascii: ",")) {
                position += 1
                continue
            }
            if peek(UInt8(ascii: "]")) {
                position += 1
                depth -= 1
                return .array(items)
            }
            throw error("expected ',' or ']' in array")
        }
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        let start = position
        position += 1
        // Bytes are copied out only once an escape is met; until then the string is the input's
        // run itself. All bits of the run's bytes: below 0x80, it is ASCII, valid as it stands.
        var scalars: [UInt8]?
        var bits: UInt8 = 0
        var runStart = position
        while position < input.count {
            let byte = input[position]
            switch byte {
            case UInt8(ascii: "\""):
                let run = UnsafeBufferPointer(rebasing: input[runStart..<position])
                position += 1
                if scalars != nil {
                    scalars!.append(contentsOf: run)
                    return try Self.string(scalars!, start: start)
                }
                // Names, tokens and most values: ASCII, decoded without a second look.
                if bits < 0x80 { return String(decoding: run, as: UTF8.self) }
                return try Self.string(run, start: start)
            case UInt8(ascii: "\\"):
                if scalars == nil { scalars = [] }
                scalars!.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<position]))
                try parseEscape(into: &scalars!)
                runStart = position
            case 0..<0x20:
                throw error("control character \(describe(byte)) inside a string must be escaped")
            default:
                bits |= byte
                position += 1
            }
        }
        throw JSONParseError(offset: start, message: "unterminated string")
    }

    private static func string(_ bytes: some Collection<UInt8>, start: Int) throws(JSONParseError) -> String {
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw JSONParseError(offset: start, message: "string is not valid UTF-8")
        }
        return string
    }

    private mutating func parseEscape(into output: inout [UInt8]) throws(JSONParseError) {
        position += 1
        guard position < input.count else { throw error("unterminated escape sequence") }
        let byte = input[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""): output.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): output.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): output.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var code = try parseHex4()
            if (0xD800...0xDBFF).contains(code) {
                guard position + 1 < input.count, input[position] == UInt8(ascii: "\\"), input[position + 1] == UInt8(ascii: "u") else {
                    throw error("lone high surrogate in \\u escape")
                }
                position += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw error("high surrogate not followed by a low surrogate") }
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(code) {
                throw error("lone low surrogate in \\u escape")
            }
            output.append(contentsOf: Array(String(Character(Unicode.Scalar(code)!)).utf8))
        default:
            position -= 1
            throw error("invalid escape \\\(describe(byte))")
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard position + 4 <= input.count else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = input[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit \(describe(byte)) in \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = position
        var isInteger = true
        if peek(UInt8(ascii: "-")) { position += 1 }
        if peek(UInt8(ascii: "0")) {
            position += 1
        } else if position < input.count, (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(input[position]) {
            skipDigits()
        } else {
            throw error("expected a digit")
        }
        if peek(UInt8(ascii: ".")) {
            isInteger = false
            position += 1
            guard skipDigits() > 0 else { throw error("expected a digit after '.'") }
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            isInteger = false
            position += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { position += 1 }
            guard skipDigits() > 0 else { throw error("expected a digit in the exponent") }
        }
        let text = String(decoding: input[start..<position], as: UTF8.self)
        if isInteger, let int = Int(text) { return .int(int) }
        guard let double = Double(text), double.isFinite else {
            throw JSONParseError(offset: start, message: "number \(text) is out of range")
        }
        return .double(double)
    }

    @discardableResult
    private mutating func skipDigits() -> Int {
        let start = position
        while position < input.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(input[position]) { position += 1 }
        return position - start
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        let matches = position + count <= input.count
            && literal.withUTF8Buffer { expected in input[position..<position + count].elementsEqual(expected) }
        guard matches else { throw error("unexpected \(describe(input[position])), expected a value") }
        position += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > Self.maximumDepth { throw error("nesting deeper than \(Self.maximumDepth) levels") }
    }

    private mutating func skipWhitespace() {
        while position < input.count {
            switch input[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private func peek(_ byte: UInt8) -> Bool {
        position < input.count && input[position] == byte
    }

    private func error(_ message: String) -> JSONParseError {
        JSONParseError(offset: position, message: message)
    }

    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: false)
    }
}
