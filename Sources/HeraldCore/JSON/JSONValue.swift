/// Any JSON value: the type of custom payload keys, Live Activity `content-state` and `attributes`,
/// and of anything Herald reads back from JSON (APNs error bodies, raw payloads).
///
/// Objects are written with their keys sorted, so the same value always encodes to the same bytes.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number without a fraction or exponent that fits an `Int`.
    case int(Int)
    /// Any other number. Non-finite values cannot be encoded and are refused when a payload is encoded.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue {
    /// The value of `key` when this is an object, otherwise `nil`.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The number as a `Double`, when this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The number as an `Int`, when this is an integer (or a double with no fraction that fits).
    public var intValue: Int? {
        switch self {
        case .int(let i): return i
        case .double(let d): return Int(exactly: d)
        default: return nil
        }
    }

    /// The members, when this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The compact JSON text of this value (keys sorted).
    public var jsonString: String {
        var writer = JSONWriter()
        writer.value(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Whether every number inside is finite (JSON has no NaN or infinity).
    var isEncodable: Bool {
        switch self {
        case .double(let d): return d.isFinite
        case .array(let items): return items.allSatisfy(\.isEncodable)
        case .object(let members): return members.values.allSatisfy(\.isEncodable)
        default: return true
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { jsonString }
}
