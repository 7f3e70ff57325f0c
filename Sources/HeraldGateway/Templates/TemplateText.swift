import HeraldCore

/// One text of a template (a title, a URL, a string in its `data`), parsed once into the runs
/// written as they are and the variables filled in, so that rendering never parses again.
///
/// `{{ name }}`, `{{ name | default: "there" }}`, `{{ items | join: ", " }}`: whitespace inside
/// the braces is free; a filter's argument is a double-quoted string with `\"` and `\\` escapes.
/// A lone `}}` is text; a `{{` without its `}}`, or anything else between them, is an error.
struct TemplateText: Sendable, Hashable {
    /// A run of text as written, or a variable filled in.
    enum Segment: Sendable, Hashable {
        case literal(String)
        case variable(Variable)
    }

    /// A variable and its filters.
    struct Variable: Sendable, Hashable {
        var name: String
        /// The `default` filter's text: used when the value is absent, null, an empty string or an
        /// empty array.
        var fallback: String?
        /// The `join` filter's separator between an array's elements; `nil`: ``defaultSeparator``.
        var separator: String?
    }

    /// What an array's elements are joined with when no `join` filter says otherwise.
    static let defaultSeparator = ", "

    /// The filters a variable may have.
    static let filters = ["default", "join"]

    /// The text as given: what ``NotificationTemplate/encoded()`` writes.
    let source: String
    let segments: [Segment]

    /// `source` parsed; an error names `path`, the field it is from.
    init(_ source: String, at path: String) throws(FieldError) {
        let bytes = Array(source.utf8)
        var segments: [Segment] = []
        var literalStart = 0
        var index = 0
        while index + 1 < bytes.count {
            guard bytes[index] == UInt8(ascii: "{"), bytes[index + 1] == UInt8(ascii: "{") else {
                index += 1
                continue
            }
            // Runs end at an ASCII brace, so each is whole UTF-8.
            if literalStart < index { segments.append(.literal(String(decoding: bytes[literalStart..<index], as: UTF8.self))) }
            let (variable, end) = try Self.tag(in: bytes, at: index, path: path)
            segments.append(.variable(variable))
            index = end
            literalStart = end
        }
        if literalStart < bytes.count { segments.append(.literal(String(decoding: bytes[literalStart...], as: UTF8.self))) }
        self.source = source
        self.segments = segments
    }

    /// The variables used, in order, as often as used.
    var variables: [Variable] {
        segments.compactMap { segment in
            guard case .variable(let variable) = segment else { return nil }
            return variable
        }
    }

    /// The variable and its filters of the tag whose `{{` is at `start`, and where the text goes on after its `}}`.
    private static func tag(in bytes: [UInt8], at start: Int, path: String) throws(FieldError) -> (Variable, end: Int) {
        // Its `}}`: the first outside a string (a filter's argument may hold one).
        var close = start + 2
        while close < bytes.count, !(bytes[close] == UInt8(ascii: "}") && close + 1 < bytes.count && bytes[close + 1] == UInt8(ascii: "}")) {
            guard bytes[close] == UInt8(ascii: "\"") else {
                close += 1
                continue
            }
            close += 1
            while close < bytes.count, bytes[close] != UInt8(ascii: "\"") { close += bytes[close] == UInt8(ascii: "\\") ? 2 : 1 }
            close += 1
        }
        guard close < bytes.count else {
            throw FieldError(path, "unclosed tag \(quoted(String(decoding: bytes[start...], as: UTF8.self))) at byte \(start) (close it with }})")
        }
        func invalid(_ reason: String) -> FieldError {
            FieldError(path, "invalid tag \(quoted(String(decoding: bytes[start..<close + 2], as: UTF8.self))) at byte \(start): \(reason)")
        }
        var position = start + 2
        func skipSpace() {
            while position < close, isSpace(bytes[position]) { position += 1 }
        }
        func word() -> String {
            let first = position
            while position < close, isWordByte(bytes[position]) { position += 1 }
            return String(decoding: bytes[first..<position], as: UTF8.self)
        }

        skipSpace()
        let name = word()
        guard isVariableName(name) else {
            throw invalid(
                "expected a variable name (letters, digits and _, not starting with a digit, at most \(NotificationTemplate.maximumVariableNameLength) bytes)")
        }
        var variable = Variable(name: name)
        while true {
            skipSpace()
            if position == close { break }
            guard bytes[position] == UInt8(ascii: "|") else { throw invalid("expected | and a filter, or }}, after \(name)") }
            position += 1
            skipSpace()
            let filter = word()
            guard !filter.isEmpty else { throw invalid("expected a filter after | (\(filters.joined(separator: ", ")))") }
            guard filters.contains(filter) else {
                throw FieldError(path, "unknown filter \(quoted(filter)) (filters: \(filters.joined(separator: ", ")))")
            }
            guard (filter == "default" ? variable.fallback : variable.separator) == nil else { throw invalid("the filter \(filter) is given twice") }
            skipSpace()
            guard position < close, bytes[position] == UInt8(ascii: ":") else { throw invalid("the filter \(filter) takes a string: \(filter): \"…\"") }
            position += 1
            skipSpace()
            guard position < close, bytes[position] == UInt8(ascii: "\"") else { throw invalid("the filter \(filter) takes a string: \(filter): \"…\"") }
            position += 1
            var argument: [UInt8] = []
            while position < close, bytes[position] != UInt8(ascii: "\"") {
                if bytes[position] == UInt8(ascii: "\\") {
                    position += 1
                    guard position < close, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "\\") else {
                        throw invalid("a string's only escapes are \\\" and \\\\")
                    }
                }
                argument.append(bytes[position])
                position += 1
            }
            guard position < close else { throw invalid("unclosed string") }
            position += 1
            // Escapes are ASCII, so the argument is whole UTF-8.
            if filter == "default" {
                variable.fallback = String(decoding: argument, as: UTF8.self)
            } else {
                variable.separator = String(decoding: argument, as: UTF8.self)
            }
        }
        return (variable, close + 2)
    }

    /// Whether `name` is a variable's name: `[A-Za-z_][A-Za-z0-9_]*`, at most
    /// ``NotificationTemplate/maximumVariableNameLength`` bytes.
    static func isVariableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.count <= NotificationTemplate.maximumVariableNameLength && name.utf8.allSatisfy(isWordByte)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"): true
        default: false
        }
    }

    /// The caller's `text` quoted for a message, escaped so nothing in it reaches a terminal.
    static func quoted(_ text: String) -> String {
        String(reflecting: PeerText(text, limit: 64).description)
    }
}

extension TemplateText {
    /// The text with each variable's value from `values` (``NotificationTemplate/reservedVariables``
    /// when absent there); an error names `path`, the field rendered (made only then).
    func render(_ values: [String: JSONValue], at path: @autoclosure () -> String) throws(TemplateError) -> String {
        // Most texts of most templates: nothing to fill in.
        if segments.count == 1, case .literal(let text) = segments[0] { return text }
        var result = ""
        for segment in segments {
            switch segment {
            case .literal(let text):
                result += text
            case .variable(let variable):
                try variable.write(values[variable.name] ?? NotificationTemplate.reservedVariables[variable.name], to: &result, at: path)
            }
        }
        return result
    }
}

extension TemplateText.Variable {
    /// Appends `value` as text: a string as it is, a number as its JSON, `true`/`false`, an
    /// array's elements joined; the `default` when it is absent, null or empty.
    func write(_ value: JSONValue?, to result: inout String, at path: () -> String) throws(TemplateError) {
        switch value {
        case nil, .null?:
            guard let fallback else {
                throw TemplateError(.missingVariable, "variable \(TemplateText.quoted(name)) has no value and no default (\(path()))")
            }
            result += fallback
        case .string("")?, .array([])?:
            if let fallback { result += fallback }
        case let value?:
            try append(value, to: &result, at: path)
        }
    }

    private func append(_ value: JSONValue, to result: inout String, at path: () -> String) throws(TemplateError) {
        switch value {
        case .string(let text):
            result += text
        case .int(let number):
            result += String(number)
        case .double:
            result += value.jsonString
        case .bool(let flag):
            result += flag ? "true" : "false"
        case .array(let items):
            for (index, item) in items.enumerated() {
                if index > 0 { result += separator ?? TemplateText.defaultSeparator }
                guard item != .null, item.objectValue == nil else {
                    throw TemplateError(
                        .invalidValue, "variable \(TemplateText.quoted(name)) holds \(item == .null ? "null" : "an object") in its array; a text takes strings, numbers, true or false (\(path()))")
                }
                try append(item, to: &result, at: path)
            }
        case .object, .null:
            throw TemplateError(
                .invalidValue, "variable \(TemplateText.quoted(name)) is an object; a text takes a string, a number, true or false, or an array of them (\(path()))")
        }
    }
}
