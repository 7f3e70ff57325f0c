import HeraldCore
import HeraldStore

/// Something wrong with one field of a JSON document: where (`apps[0].authKey.file`) and what.
public struct FieldError: Error, Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var message: String

    public init(_ path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

/// The fields of one JSON object, read by name with the path to each for error messages, and
/// checked: a field of the wrong type or an unknown field is an error, not ignored.
struct JSONFields {
    /// The longest URL a field may hold (an endpoint, where a click opens).
    static let maximumURLLength = 2048

    /// Whether `text` is an `https://` URL of at most ``maximumURLLength`` bytes, printable and
    /// without spaces: what the gateway sends to, or hands a browser to open.
    static func isHTTPSURL(_ text: String) -> Bool {
        text.hasPrefix("https://") && text.utf8.count <= maximumURLLength && PeerText.isSafe(text) && !text.contains(" ")
    }

    let path: String
    let members: [String: JSONValue]
    /// How the document these fields are from gives secrets: as files and environment variables
    /// (the configuration file), or inline (an app defined through the admin API). The objects
    /// read from these fields are of the same document.
    var credentials: CredentialForm = .files

    init(_ value: JSONValue, path: String) throws(FieldError) {
        guard case .object(let members) = value else { throw FieldError(path, "must be a JSON object") }
        self.path = path
        self.members = members
    }

    init(_ value: JSONValue, path: String, credentials: CredentialForm) throws(FieldError) {
        try self.init(value, path: path)
        self.credentials = credentials
    }

    func at(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    /// Fails on a field not in `allowed` (a misspelled option is not silently ignored); of
    /// several unknown fields, names the first in name order.
    ///
    /// An array, not a set: a body has a handful of fields, checked against at most a few dozen
    /// names, and the bulk import checks every line (a set built per line was 9 % of its CPU).
    func only(_ allowed: [String]) throws(FieldError) {
        guard members.keys.contains(where: { !allowed.contains($0) }) else { return }
        let unknown = members.keys.filter { !allowed.contains($0) }.min()!
        throw FieldError(at(unknown), "unknown field (expected one of: \(allowed.sorted().joined(separator: ", ")))")
    }

    /// `nil` when absent or `null`.
    func string(_ name: String) throws(FieldError) -> String? {
        switch members[name] {
        case .none, .some(.null): return nil
        case .some(.string(let text)): return text
        case .some: throw FieldError(at(name), "must be a string")
        }
    }

    func requiredString(_ name: String) throws(FieldError) -> String {
        guard let value = try string(name) else { throw FieldError(at(name), "is required") }
        guard !value.isEmpty else { throw FieldError(at(name), "must not be empty") }
        return value
    }

    func int(_ name: String) throws(FieldError) -> Int? {
        switch members[name] {
        case .none, .some(.null): return nil
        case .some(.int(let value)): return value
        case .some(.double(let value)) where value.rounded() == value && value.magnitude < 9e15: return Int(value)
        case .some: throw FieldError(at(name), "must be an integer")
        }
    }

    /// A number (`nil` when absent or `null`).
    func number(_ name: String) throws(FieldError) -> Double? {
        switch members[name] {
        case .none, .some(.null): return nil
        case .some(.int(let value)): return Double(value)
        case .some(.double(let value)) where value.isFinite: return value
        case .some: throw FieldError(at(name), "must be a number")
        }
    }

    /// A time of day, `HH:MM` on a 24-hour clock (`nil` when absent or `null`).
    func timeOfDay(_ name: String) throws(FieldError) -> TimeOfDay? {
        guard let text = try string(name) else { return nil }
        guard let time = TimeOfDay(text) else {
            throw FieldError(at(name), "must be HH:MM on a 24-hour clock (00:00 to 23:59), not \(String(reflecting: PeerText(text, limit: 16).description))")
        }
        return time
    }

    /// An IANA time zone name (`nil` when absent or `null`).
    func timeZone(_ name: String) throws(FieldError) -> String? {
        guard let text = try string(name) else { return nil }
        guard DeliverySchedule.isTimeZone(text) else {
            throw FieldError(
                at(name), "\(String(reflecting: PeerText(text, limit: 64).description)) is not a time zone of the IANA database (e.g. Europe/Paris, America/New_York, UTC)"
            )
        }
        return text
    }

    func bool(_ name: String) throws(FieldError) -> Bool? {
        switch members[name] {
        case .none, .some(.null): return nil
        case .some(.bool(let value)): return value
        case .some: throw FieldError(at(name), "must be true or false")
        }
    }

    func strings(_ name: String) throws(FieldError) -> [String]? {
        switch members[name] {
        case .none, .some(.null): return nil
        case .some(.array(let items)):
            var strings: [String] = []
            for (index, item) in items.enumerated() {
                guard case .string(let text) = item else { throw FieldError("\(at(name))[\(index)]", "must be a string") }
                strings.append(text)
            }
            return strings
        case .some: throw FieldError(at(name), "must be an array of strings")
        }
    }

    func object(_ name: String) throws(FieldError) -> JSONFields? {
        switch members[name] {
        case .none, .some(.null): return nil
        case .some(let value): return try JSONFields(value, path: at(name), credentials: credentials)
        }
    }

    func objects(_ name: String) throws(FieldError) -> [JSONFields] {
        switch members[name] {
        case .none, .some(.null): return []
        case .some(.array(let items)):
            var objects: [JSONFields] = []
            for (index, item) in items.enumerated() { objects.append(try JSONFields(item, path: "\(at(name))[\(index)]", credentials: credentials)) }
            return objects
        case .some: throw FieldError(at(name), "must be an array of objects")
        }
    }

    func has(_ name: String) -> Bool { members[name] != nil }

    /// A token environment, `production` or `sandbox`; `nil` when absent or `null`.
    func environment(_ name: String) throws(FieldError) -> TokenEnvironment? {
        try string(name).map { text throws(FieldError) in try Self.environment(text, at: at(name)) }
    }

    static func environment(_ text: String, at path: String) throws(FieldError) -> TokenEnvironment {
        guard let environment = TokenEnvironment(rawValue: text) else { throw FieldError(path, "must be production or sandbox") }
        return environment
    }
}
