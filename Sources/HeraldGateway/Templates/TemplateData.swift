import HeraldCore

/// A value of a template's `data`: JSON whose strings, at any depth, are texts with variables.
indirect enum TemplateData: Sendable, Hashable {
    case text(TemplateText)
    case array([TemplateData])
    case object([String: TemplateData])
    /// `null`, `true`/`false` or a number, as given.
    case constant(JSONValue)

    /// `value` at `path` (`data.orderID`), at `level` of nesting (the `data` object is level 1):
    /// an array or object deeper than ``NotificationTemplate/maximumDataDepth`` is refused, and
    /// so is a string longer than ``NotificationTemplate/maximumTextLength``.
    init(_ value: JSONValue, at path: String, level: Int) throws(FieldError) {
        switch value {
        case .string(let source):
            try NotificationTemplate.checkLength(source, at: path)
            self = .text(try TemplateText(source, at: path))
        case .array(let items):
            guard level <= NotificationTemplate.maximumDataDepth else {
                throw FieldError(path, "nested deeper than \(NotificationTemplate.maximumDataDepth) levels")
            }
            var elements: [TemplateData] = []
            for (index, item) in items.enumerated() { elements.append(try TemplateData(item, at: "\(path)[\(index)]", level: level + 1)) }
            self = .array(elements)
        case .object(let members):
            guard level <= NotificationTemplate.maximumDataDepth else {
                throw FieldError(path, "nested deeper than \(NotificationTemplate.maximumDataDepth) levels")
            }
            var object: [String: TemplateData] = [:]
            // In name order: the same document always fails on the same field.
            for key in members.keys.sorted() { object[key] = try TemplateData(members[key]!, at: Self.path(path, key), level: level + 1) }
            self = .object(object)
        default:
            self = .constant(value)
        }
    }

    /// The member `key` of the object at `path`, its name escaped for a message.
    static func path(_ path: String, _ key: String) -> String {
        "\(path).\(PeerText(key, limit: 64))"
    }

    /// As given, for ``NotificationTemplate/encoded()``.
    var json: JSONValue {
        switch self {
        case .text(let text): .string(text.source)
        case .array(let items): .array(items.map(\.json))
        case .object(let members): .object(members.mapValues(\.json))
        case .constant(let value): value
        }
    }

    /// Every text inside, depth first.
    var texts: [TemplateText] {
        switch self {
        case .text(let text): [text]
        case .array(let items): items.flatMap(\.texts)
        case .object(let members): members.values.flatMap(\.texts)
        case .constant: []
        }
    }

    /// With each text rendered with `values`; an error names the field's `path` (made only then).
    func render(_ values: [String: JSONValue], at path: () -> String) throws(TemplateError) -> JSONValue {
        switch self {
        case .text(let text):
            return .string(try text.render(values, at: path()))
        case .array(let items):
            var rendered: [JSONValue] = []
            rendered.reserveCapacity(items.count)
            for (index, item) in items.enumerated() { rendered.append(try item.render(values, at: { "\(path())[\(index)]" })) }
            return .array(rendered)
        case .object(let members):
            var rendered: [String: JSONValue] = [:]
            rendered.reserveCapacity(members.count)
            for (key, member) in members { rendered[key] = try member.render(values, at: { Self.path(path(), key) }) }
            return .object(rendered)
        case .constant(let value):
            return value
        }
    }
}
