import HeraldCore

/// The checked-in OpenAPI document, read as a contract: which routes and methods exist, which
/// statuses each may answer, and the shape of each JSON answer (the JSON Schema subset the
/// document uses: `$ref`, `type`, `required`, `properties`, `additionalProperties`, `items`,
/// `enum`, `allOf`).
struct OpenAPIContract: Sendable {
    let root: JSONValue

    init(bytes: [UInt8]) throws {
        root = try JSONValue(parsing: bytes)
    }

    /// `METHOD /path/{param}` for every operation.
    var operations: Set<String> {
        var operations = Set<String>()
        for (path, item) in root["paths"]?.objectValue ?? [:] {
            for method in (item.objectValue ?? [:]).keys where method != "parameters" {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    /// The documented path template a concrete path matches.
    func template(for path: String) -> String? {
        let parts = path.split(separator: "?")[0].split(separator: "/")
        for template in (root["paths"]?.objectValue ?? [:]).keys {
            let pattern = template.split(separator: "/")
            guard pattern.count == parts.count else { continue }
            if zip(pattern, parts).allSatisfy({ $0.hasPrefix("{") || $0 == $1 }) { return template }
        }
        return nil
    }

    /// What is wrong with an answer, or `nil` when it is as documented. Undocumented routes are
    /// answered 404 or 405 (with the error shape).
    func check(method: String, path: String, status: Int, body: JSONValue?) -> String? {
        guard let template = template(for: path), let operation = root["paths"]?[template]?[method.lowercased()] else {
            guard status == 404 || status == 405 else { return "an undocumented route answered \(status)" }
            return body.flatMap { conforms($0, to: ["$ref": "#/components/schemas/Error"], at: "body") }
        }
        guard let response = operation["responses"]?[String(status)] else {
            return "status \(status) is not documented for \(method) \(template)"
        }
        guard let schema = response["content"]?["application/json"]?["schema"] else { return nil }
        guard let body else { return "a JSON body is documented, none came" }
        return conforms(body, to: schema, at: "body")
    }

    private func resolve(_ schema: JSONValue) -> JSONValue {
        guard let reference = schema["$ref"]?.stringValue else { return schema }
        let name = reference.split(separator: "/").last.map(String.init) ?? ""
        return root["components"]?["schemas"]?[name] ?? .null
    }

    private func conforms(_ value: JSONValue, to given: JSONValue, at path: String) -> String? {
        let schema = resolve(given)
        if case .array(let parts)? = schema["allOf"] {
            for part in parts {
                if let problem = conforms(value, to: part, at: path) { return problem }
            }
            return nil
        }
        if let allowed = schema["enum"], case .array(let options) = allowed, !options.contains(value) {
            return "\(path): \(value.jsonString) is not one of \(allowed.jsonString)"
        }
        let types: [String]
        switch schema["type"] {
        case .string(let one)?: types = [one]
        case .array(let many)?: types = many.compactMap(\.stringValue)
        default: types = []
        }
        if !types.isEmpty, !types.contains(where: { Self.matches(value, type: $0) }) {
            return "\(path): \(value.jsonString) is not \(types.joined(separator: " or "))"
        }
        switch value {
        case .object(let members):
            for name in schema["required"].map(Self.strings) ?? [] where members[name] == nil {
                return "\(path).\(name) is required"
            }
            let properties = schema["properties"]?.objectValue ?? [:]
            for (name, member) in members {
                if let property = properties[name] {
                    if let problem = conforms(member, to: property, at: "\(path).\(name)") { return problem }
                } else if case .object(let extra)? = schema["additionalProperties"] {
                    if let problem = conforms(member, to: .object(extra), at: "\(path).\(name)") { return problem }
                } else if schema["additionalProperties"] == .bool(false) {
                    return "\(path).\(name) is not documented"
                }
            }
        case .array(let items):
            if let itemSchema = schema["items"] {
                for (index, item) in items.enumerated() {
                    if let problem = conforms(item, to: itemSchema, at: "\(path)[\(index)]") { return problem }
                }
            }
        default:
            break
        }
        return nil
    }

    private static func strings(_ value: JSONValue) -> [String] {
        if case .array(let items) = value { return items.compactMap(\.stringValue) }
        return []
    }

    private static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null), ("integer", .int): true
        case ("number", .int), ("number", .double): true
        default: false
        }
    }
}
