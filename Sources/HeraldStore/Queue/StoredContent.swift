import HeraldCore

/// A notification's ``NotificationContent`` as its `content` column holds it: a JSON object,
/// the template and its data kept as the JSON they were given in.
enum StoredContent {
    static func encode(_ content: NotificationContent?) -> String? {
        guard let content, !content.isEmpty else { return nil }
        var writer = JSONWriter(capacity: 256 + (content.template?.body.count ?? 0))
        writer.beginObject()
        if let category = content.category {
            writer.key("category")
            writer.string(category)
        }
        if content.critical {
            writer.key("critical")
            writer.bool(true)
        }
        if let template = content.template {
            writer.key("template")
            writer.beginObject()
            writer.key("name")
            writer.string(template.name)
            writer.key("version")
            writer.int(template.version)
            writer.key("body")
            writer.rawJSON(template.body)
            if let data = template.data {
                writer.key("data")
                writer.rawJSON(data)
            }
            if let data = template.dataByUser {
                writer.key("dataByUser")
                writer.rawJSON(data)
            }
            writer.endObject()
        }
        if let digest = content.digest {
            writer.key("digest")
            writer.beginObject()
            writer.key("key")
            writer.string(digest.key)
            writer.key("windowSeconds")
            writer.int(digest.windowSeconds)
            if let item = digest.item {
                writer.key("item")
                writer.string(item)
            }
            writer.endObject()
        }
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// The content stored as `text`; `nil` for none, or for text this Herald never writes.
    static func decode(_ text: String?) -> NotificationContent? {
        guard let text, case .object(let members)? = try? JSONValue(parsing: text) else { return nil }
        var content = NotificationContent(category: members["category"]?.stringValue, critical: members["critical"] == .bool(true))
        if case .object(let template)? = members["template"], let name = template["name"]?.stringValue, let body = template["body"] {
            content.template = TemplateUse(
                name: name, version: template["version"]?.intValue ?? 0, body: Self.bytes(body), data: template["data"].map(Self.bytes),
                dataByUser: template["dataByUser"].map(Self.bytes))
        }
        if case .object(let digest)? = members["digest"], let key = digest["key"]?.stringValue, let window = digest["windowSeconds"]?.intValue {
            content.digest = DigestRequest(key: key, windowSeconds: window, item: digest["item"]?.stringValue)
        }
        return content
    }

    private static func bytes(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.value(value)
        return writer.bytes
    }
}

/// A device's own choices per category as its `preferences` column holds them:
/// `marketing:0,orders:1`, sorted; `""` clears them, NULL keeps them.
enum PreferenceList {
    static func encode(_ choices: [String: Bool]) -> String {
        choices.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value ? 1 : 0)" }.joined(separator: ",")
    }

    static func decode(_ text: String?) -> [String: Bool] {
        guard let text, !text.isEmpty else { return [:] }
        var choices: [String: Bool] = [:]
        for entry in text.split(separator: ",") {
            guard let colon = entry.lastIndex(of: ":") else { continue }
            choices[String(entry[..<colon])] = entry[entry.index(after: colon)...] == "1"
        }
        return choices
    }
}
