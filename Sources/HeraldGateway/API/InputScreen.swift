import HeraldCore
import Hummingbird

/// Checks every request makes before any route reads it: nothing a caller sends may carry a NUL
/// or another control character into a header value, a SQL parameter or a log line, or be text
/// that is not UTF-8. PostgreSQL refuses NUL in text outright (that was a 500), SQLite stores it,
/// and a control character in an HTTP/2 header value makes APNs drop the connection.
enum InputScreen {
    /// What is wrong with a request target (path and query, as sent), or `nil` when it is fine:
    /// a raw or percent-encoded control character (`%00`–`%1F`, `%7F`), a malformed escape, or
    /// bytes that do not decode as UTF-8.
    static func problem(inTarget target: String) -> String? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(target.utf8.count)
        var iterator = target.utf8.makeIterator()
        while let byte = iterator.next() {
            var value = byte
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return "the URL has a '%' that is not followed by two hex digits; percent-encode it as %25"
                }
                value = high << 4 | low
            }
            if value < 0x20 || value == 0x7F {
                return "the URL holds a control character (byte 0x\(String(value, radix: 16))); no path or query value may contain one"
            }
            decoded.append(value)
        }
        guard String(validating: decoded, as: UTF8.self) != nil else {
            return "the URL's percent-encoded bytes are not UTF-8"
        }
        return nil
    }

    /// The path (`payload.aps.alert`, `to.users[3]`) of the first string or key in `value` that
    /// holds a NUL, or `nil` when there is none. The parser already refused raw control bytes
    /// and invalid UTF-8; `\u0000` is valid JSON, but no field of the API may carry it.
    static func pathOfNUL(in value: JSONValue) -> String? {
        // Looked for first without making paths: a path string per member was most of the time
        // this took for each line of a bulk import, where none has a NUL.
        containsNUL(value) ? locateNUL(in: value, path: "") : nil
    }

    private static func containsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): hasNUL(text)
        case .array(let items): items.contains(where: containsNUL)
        case .object(let members): members.contains { hasNUL($0.key) || containsNUL($0.value) }
        case .null, .bool, .int, .double: false
        }
    }

    private static func hasNUL(_ text: String) -> Bool {
        text.containsUTF8Byte { $0 == 0 }
    }

    private static func locateNUL(in value: JSONValue, path: String) -> String? {
        switch value {
        case .string(let text):
            return hasNUL(text) ? (path.isEmpty ? "the body" : path) : nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = locateNUL(in: item, path: "\(path)[\(index)]") { return found }
            }
            return nil
        case .object(let members):
            for (key, member) in members {
                let memberPath = path.isEmpty ? key : "\(path).\(key)"
                if hasNUL(key) { return "a key in \(path.isEmpty ? "the body" : path)" }
                if let found = locateNUL(in: member, path: memberPath) { return found }
            }
            return nil
        case .null, .bool, .int, .double:
            return nil
        }
    }

    /// Throws a 400 naming the field when `value` holds a NUL.
    static func refuseNUL(in value: JSONValue) throws(APIError) {
        if let path = pathOfNUL(in: value) {
            throw APIError.invalid("\(PeerText(path, limit: 128)): must not contain NUL (\\u0000)")
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Answers 400 for a request whose target holds a control character or bytes that are not UTF-8,
/// before any route or store sees it.
struct InputScreenMiddleware: RouterMiddleware {
    typealias Context = GatewayContext

    func handle(_ request: Request, context: GatewayContext, next: (Request, GatewayContext) async throws -> Response) async throws -> Response {
        if let problem = InputScreen.problem(inTarget: request.uri.string) {
            throw APIError.invalid(problem)
        }
        return try await next(request, context)
    }
}
