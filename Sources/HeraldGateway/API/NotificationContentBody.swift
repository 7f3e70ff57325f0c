import HeraldCore
import HeraldStore

/// The fields of `POST /v1/apps/{app}/notifications` that say what a notification is and whom it
/// suits: `template` with its `data` and `dataByUser`, `category`, `critical` and `digest`.
/// Checked before it is queued, so a notification accepted can be rendered and screened: an
/// unknown template or category, a variable no device could fill, a digest not to users are 4xx.
struct NotificationContentBody {
    static let fieldNames = ["template", "data", "dataByUser", "category", "critical", "digest"]
    /// The largest `data` object, encoded.
    static let maximumDataSize = 8192
    /// The most users `dataByUser` may name, and the largest object for one of them, encoded.
    static let maximumDataUsers = 1000
    static let maximumUserDataSize = 2048

    var templateName: String?
    var data: [String: JSONValue]
    var dataByUser: [String: [String: JSONValue]]
    var category: String?
    var critical: Bool
    var digest: DigestRequest?

    /// The content fields of `fields`; `nil` when it has none.
    static func parse(_ fields: JSONFields, app: GatewayConfiguration.App, audience: Audience) throws(FieldError) -> NotificationContentBody? {
        guard fieldNames.contains(where: fields.has) else { return nil }
        var body = NotificationContentBody(data: [:], dataByUser: [:], critical: try fields.bool("critical") ?? false)
        if let name = try fields.string("template") {
            guard StoredTemplate.isValidName(name) else {
                throw FieldError("template", "must be a template's name: 1 to \(StoredTemplate.maximumNameLength) of A-Z a-z 0-9 _ - .")
            }
            body.templateName = name
        }
        if let data = try fields.object("data") {
            guard body.templateName != nil else { throw FieldError("data", "fills a template's variables; name the template (\"template\")") }
            try check(size: .object(data.members), at: "data", maximum: maximumDataSize)
            body.data = data.members
        }
        if let byUser = try fields.object("dataByUser") {
            guard body.templateName != nil else { throw FieldError("dataByUser", "fills a template's variables per user; name the template (\"template\")") }
            guard byUser.members.count <= maximumDataUsers else { throw FieldError("dataByUser", "names \(byUser.members.count) users; at most \(maximumDataUsers)") }
            for user in byUser.members.keys.sorted() {
                guard DeviceRegistration.isValidUser(user) else {
                    throw FieldError("dataByUser", "\(String(reflecting: PeerText(user, limit: 64).description)) is not a user ID (1 to \(DeviceRegistration.maximumUserLength) bytes without control characters)")
                }
                guard case .object(let members) = byUser.members[user]! else { throw FieldError("dataByUser.\(PeerText(user, limit: 64))", "must be a JSON object") }
                try check(size: .object(members), at: "dataByUser.\(PeerText(user, limit: 64))", maximum: maximumUserDataSize)
                body.dataByUser[user] = members
            }
        }
        if let category = try fields.string("category") {
            guard app.categories[category] != nil else {
                let known = app.categories.keys.sorted()
                throw FieldError(
                    "category",
                    "\(String(reflecting: PeerText(category, limit: 64).description)) is not a category of app '\(app.id)' (\(known.isEmpty ? "it has none: add categories to its configuration" : "its categories: \(known.joined(separator: ", "))"))")
            }
            body.category = category
        }
        if body.critical, body.category == nil { throw FieldError("critical", "lets a notification pass its category's caps; name the category (\"category\")") }
        if let digest = try fields.object("digest") {
            try digest.only(["key", "windowSeconds", "item"])
            guard case .users = audience else { throw FieldError("digest", "folds notifications per user: send it to users ({\"to\": {\"users\": […]}})") }
            let key = try digest.requiredString("key")
            guard !key.isEmpty, key.utf8.count <= DigestRequest.maximumKeyLength, PeerText.isSafe(key) else {
                throw FieldError(digest.at("key"), "must be 1 to \(DigestRequest.maximumKeyLength) printable characters")
            }
            guard let window = try digest.int("windowSeconds") else { throw FieldError(digest.at("windowSeconds"), "is required: how long the digest gathers, in seconds") }
            guard (1...DigestRequest.maximumWindowSeconds).contains(window) else {
                throw FieldError(digest.at("windowSeconds"), "must be 1 to \(DigestRequest.maximumWindowSeconds) (a day)")
            }
            let item = try digest.string("item")
            if let item, item.utf8.count > DigestRequest.maximumItemLength || !PeerText.isSafe(item) {
                throw FieldError(digest.at("item"), "must be at most \(DigestRequest.maximumItemLength) printable characters")
            }
            body.digest = DigestRequest(key: key, windowSeconds: window, item: item)
        }
        return body
    }

    private static func check(size value: JSONValue, at path: String, maximum: Int) throws(FieldError) {
        var writer = JSONWriter(capacity: 256)
        writer.value(value)
        guard writer.bytes.count <= maximum else { throw FieldError(path, "is \(writer.bytes.count) bytes encoded; at most \(maximum)") }
    }

    /// The content to queue: the template as stored now (its version is kept with the
    /// notification), checked against the data every device would be rendered with.
    func content(of request: NotificationRequest, app: GatewayConfiguration.App, store: HeraldStore) async throws -> NotificationContent {
        var content = NotificationContent(category: category, critical: critical, digest: digest)
        guard let templateName else { return content }
        guard let stored = try await store.template(app: app.id, name: templateName) else {
            throw APIError(
                .badRequest, "templateNotFound",
                "template: '\(templateName)' is not a template of app '\(app.id)' (store it first: PUT /v1/apps/\(app.id)/templates/\(templateName))")
        }
        let template: NotificationTemplate
        do {
            template = try NotificationTemplate.parse(JSONValue(parsing: stored.body))
        } catch {
            throw APIError(.badRequest, "templateInvalid", "template: '\(templateName)' as stored cannot be read (\(error)); store it again")
        }
        try check(template, name: templateName, request: request)
        var writer = JSONWriter(capacity: 256)
        writer.value(.object(data))
        let data = writer.bytes
        var byUser: [UInt8]?
        if !dataByUser.isEmpty {
            var writer = JSONWriter(capacity: 1024)
            writer.value(.object(dataByUser.mapValues { .object($0) }))
            byUser = writer.bytes
        }
        content.template = TemplateUse(name: templateName, version: stored.version, body: stored.body, data: data.count > 2 ? data : nil, dataByUser: byUser)
        return content
    }

    /// Refuses what would fail for every device (or every device of a user): a required variable
    /// neither `data` nor, for each user the notification names, `dataByUser` fills; a variant
    /// that does not render with them, or renders a payload over APNs's limit.
    private func check(_ template: NotificationTemplate, name: String, request: NotificationRequest) throws(APIError) {
        let users: [String]? = if case .users(let users) = request.audience { users } else { nil }
        for variable in template.requiredVariables where data[variable] == nil {
            if let users, let missing = users.first(where: { dataByUser[$0]?[variable] == nil }) {
                throw APIError(
                    .badRequest, "templateVariableMissing",
                    "data: template '\(name)' needs variable \"\(variable)\" (it has no default), and neither data nor dataByUser.\(PeerText(missing, limit: 64)) gives it")
            }
            if users == nil {
                throw APIError(
                    .badRequest, "templateVariableMissing",
                    "data: template '\(name)' needs variable \"\(variable)\" (it has no default); give it in data (dataByUser fills it only for a notification to users)")
            }
        }
        // Each variant rendered once, with the data and one user's, as a device would be.
        var variables = data
        if let some = dataByUser.keys.min(), let own = dataByUser[some] { for (key, value) in own { variables[key] = value } }
        for language in template.variants.keys.sorted() {
            do {
                let rendered = try template.render(
                    locale: language, appLanguage: nil, variables: variables, payload: request.payload, platformOptions: request.platformOptions)
                if rendered.payload.count > request.pushType.maximumPayloadSize {
                    throw APIError(
                        .badRequest, APNSReason.payloadTooLarge.rawValue,
                        "template '\(name)' in \(language) renders a payload of \(rendered.payload.count) bytes; APNs allows \(request.pushType.maximumPayloadSize) for \(request.pushType)")
                }
            } catch let error as TemplateError {
                throw APIError(.badRequest, "templateFailed", "template: '\(name)' does not render: \(error)")
            } catch let error as APIError {
                throw error
            } catch {
                throw APIError(.badRequest, "templateFailed", "template: '\(name)' does not render: \(error)")
            }
        }
    }
}
