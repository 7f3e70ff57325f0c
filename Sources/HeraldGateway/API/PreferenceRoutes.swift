import HeraldCore
import HeraldStore
import Hummingbird

/// `/v1/apps/{app}/users/{user}/preferences` and `/v1/apps/{app}/categories`: which of the app's
/// categories (``NotificationCategory``) a user receives, for every platform or per platform,
/// and the categories themselves, for the console. A device's own choices are its registration's
/// `preferences` (``DeviceRoutes``).
struct PreferenceRoutes {
    let api: GatewayAPI

    func add(to group: RouterGroup<GatewayContext>) {
        group.put("apps/:app/users/:user/preferences", use: put)
        group.get("apps/:app/users/:user/preferences", use: read)
        group.get("apps/:app/categories", use: categories)
    }

    /// `{"categories": {"marketing": false, "news": {"webpush": false}}}`: replaces the user's choices.
    @Sendable func put(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let user = try Self.user(context)
        let categories = appCategories(app)
        let fields = try await JSONBody.object(of: request, limit: api.configuration.limits.maximumBodySize)
        var preferences = UserPreferences(user: user, categories: [:])
        do throws(FieldError) {
            try fields.only(["categories"])
            guard let given = try fields.object("categories") else {
                throw FieldError("categories", "is required: an object of the app's categories, each true, false or {\"all\"?, \"apns\"?, \"webpush\"?, \"fcm\"?, \"hms\"?} of booleans")
            }
            guard given.members.count <= DeviceRegistration.maximumPreferences else {
                throw FieldError("categories", "at most \(DeviceRegistration.maximumPreferences) categories")
            }
            for name in given.members.keys.sorted() {
                try Self.checkCategory(name, in: categories, at: given)
                preferences.categories[name] = try Self.choice(given, name)
            }
        } catch {
            throw error.apiError
        }
        try await api.store.setPreferences(preferences, app: app)
        let stored = try await api.store.preferences(app: app, user: user)
        return JSONBody.object { Self.write(stored, categories: categories, to: &$0) }
    }

    @Sendable func read(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let user = try Self.user(context)
        let categories = appCategories(app)
        let stored = try await api.store.preferences(app: app, user: user)
        return JSONBody.object { Self.write(stored, categories: categories, to: &$0) }
    }

    /// The app's categories and default language, as its configuration has them.
    @Sendable func categories(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let categories = appCategories(app)
        let language = api.configuration.app(app)?.defaultLanguage
        return JSONBody.object { writer in
            writer.key("categories")
            writer.beginObject()
            for (name, category) in categories.sorted(by: { $0.key < $1.key }) {
                writer.key(name)
                writer.beginObject()
                writer.key("transactional")
                writer.bool(category.transactional)
                writer.key("commercial")
                writer.bool(category.commercial)
                writer.key("optIn")
                writer.bool(category.optIn)
                writer.key("caps")
                writer.beginArray()
                for cap in category.caps {
                    writer.beginObject()
                    writer.member("count", cap.count)
                    writer.member("windowSeconds", cap.windowSeconds)
                    writer.endObject()
                }
                writer.endArray()
                writer.endObject()
            }
            writer.endObject()
            writer.member("defaultLanguage", language)
        }
    }

    // MARK: Helpers

    private func appCategories(_ app: String) -> [String: NotificationCategory] {
        api.configuration.app(app)?.categories ?? [:]
    }

    /// The user in the path, percent-decoded (a user ID may hold `/`, `@` or spaces).
    static func user(_ context: GatewayContext) throws -> String {
        let raw = try context.parameters.require("user")
        guard let user = raw.removingPercentEncoding, DeviceRegistration.isValidUser(user) else {
            throw APIError.invalid("user: must be 1 to \(DeviceRegistration.maximumUserLength) bytes without control characters (percent-encoded in the path)")
        }
        return user
    }

    /// Refuses a name that is not one of `categories`, or is a transactional one: users cannot opt out of those.
    /// `fields` is the object that has it as a key, for the error's path.
    static func checkCategory(_ name: String, in categories: [String: NotificationCategory], at fields: JSONFields) throws(FieldError) {
        let path = fields.at(PeerText(name, limit: 80).description)
        guard let category = categories[name] else {
            let known = categories.keys.sorted().joined(separator: ", ")
            throw FieldError(path, "unknown category (the app's: \(known.isEmpty ? "none; categories are set in the app's entry of the gateway's configuration" : known))")
        }
        guard !category.transactional else {
            throw FieldError(path, "is transactional: users cannot opt out of transactional notifications")
        }
    }

    /// A category's choice: `true`/`false` for every platform, or an object of `all` and
    /// platforms (``DevicePlatform`` raw values), each a boolean.
    private static func choice(_ fields: JSONFields, _ name: String) throws(FieldError) -> UserPreferences.Choice {
        switch fields.members[name] {
        case .bool(let enabled)?:
            return UserPreferences.Choice(all: enabled)
        case .object?:
            guard let object = try fields.object(name) else { break }
            try object.only(["all"] + DevicePlatform.allCases.map(\.rawValue))
            var choice = UserPreferences.Choice(all: try object.bool("all"))
            for platform in DevicePlatform.allCases {
                if let enabled = try object.bool(platform.rawValue) { choice.platforms[platform] = enabled }
            }
            return choice
        default:
            break
        }
        throw FieldError(fields.at(name), "must be true, false or an object of booleans by platform ({\"all\", \"apns\", \"webpush\", \"fcm\", \"hms\"})")
    }

    /// A user's preferences as the API shows them: each choice as it was given (a boolean for
    /// every platform, else an object), and what each category the user may choose is by default.
    static func write(_ preferences: UserPreferences, categories: [String: NotificationCategory], to writer: inout JSONWriter) {
        writer.member("user", preferences.user)
        writer.key("categories")
        writer.beginObject()
        for (name, choice) in preferences.categories.sorted(by: { $0.key < $1.key }) {
            writer.key(name)
            if choice.platforms.isEmpty, let all = choice.all {
                writer.bool(all)
                continue
            }
            writer.beginObject()
            if let all = choice.all {
                writer.key("all")
                writer.bool(all)
            }
            for platform in DevicePlatform.allCases {
                guard let enabled = choice.platforms[platform] else { continue }
                writer.key(platform.rawValue)
                writer.bool(enabled)
            }
            writer.endObject()
        }
        writer.endObject()
        writer.key("defaults")
        writer.beginObject()
        for (name, category) in categories.sorted(by: { $0.key < $1.key }) where !category.transactional {
            writer.key(name)
            writer.bool(!category.optIn)
        }
        writer.endObject()
        writer.member("updatedAt", preferences.updatedAt)
    }
}
