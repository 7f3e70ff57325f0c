import HeraldCore
import HeraldStore
import HeraldWebPush
import Hummingbird

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `/v1/apps/{app}/devices…`: register, read, list, forget and import device tokens.
struct DeviceRoutes {
    let api: GatewayAPI

    func add(to group: RouterGroup<GatewayContext>) {
        group.put("apps/:app/devices/:token", use: register)
        group.get("apps/:app/devices/:token", use: read)
        group.delete("apps/:app/devices/:token", use: delete)
        group.post("apps/:app/devices", use: importDevices)
        group.get("apps/:app/devices", use: list)
    }

    @Sendable func register(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let token = try context.parameters.require("token")
        var fields = DeviceFields()
        // The body is optional: an empty one registers the token as it is.
        if let object = try await JSONBody.optionalObject(of: request, limit: api.configuration.limits.maximumBodySize) {
            fields = try Self.deviceFields(object, allowsToken: false, categories: api.configuration.app(app)?.categories ?? [:])
        }
        try api.checkReaches(app, fields.platform ?? .apns)
        let registration = try fields.registration(token: token)
        let (device, created) = try await api.store.register(registration, app: app)
        let defaultEnvironment = api.defaultEnvironment(of: app)
        return JSONBody.object(created ? .created : .ok) { Self.write(device, defaultEnvironment: defaultEnvironment, to: &$0) }
    }

    @Sendable func read(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let candidates = try Self.tokens(context)
        var found: Device?
        for token in candidates where found == nil { found = try await api.store.device(app: app, token: token) }
        guard let device = found else {
            throw APIError.notFound("no device \(candidates[0]) is registered with \(app)")
        }
        let defaultEnvironment = api.defaultEnvironment(of: app)
        return JSONBody.object { Self.write(device, defaultEnvironment: defaultEnvironment, to: &$0) }
    }

    @Sendable func delete(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let candidates = try Self.tokens(context)
        var deleted = false
        for token in candidates where !deleted { deleted = try await api.store.deleteDevice(app: app, token: token) }
        guard deleted else {
            throw APIError.notFound("no device \(candidates[0]) is registered with \(app)")
        }
        return Response(status: .noContent)
    }

    @Sendable func list(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let query = request.uri.queryParameters
        var filter = DeviceFilter(defaultEnvironment: api.defaultEnvironment(of: app))
        if let status = query["status"] {
            guard let parsed = DeviceStatus(rawValue: String(status)) else {
                throw APIError.invalid("status must be active, unregistered or invalid")
            }
            filter.status = parsed
        }
        if let user = query["user"] {
            // The same rule as registering one: it is a SQL parameter.
            guard DeviceRegistration.isValidUser(user) else {
                throw APIError.invalid("user must be 1 to \(DeviceRegistration.maximumUserLength) bytes without control characters")
            }
            filter.user = String(user)
        }
        if let tag = query["tag"] {
            guard DeviceRegistration.isValidTag(String(tag)) else { throw APIError.invalid("tag: 1 to 64 of A-Z a-z 0-9 . _ : -") }
            filter.tag = String(tag)
        }
        if let kind = query["kind"] {
            guard let parsed = TokenKind(rawValue: String(kind)) else { throw APIError.invalid("kind must be one of \(Self.kinds)") }
            filter.kind = parsed
        }
        if let platform = query["platform"] {
            guard let parsed = DevicePlatform(rawValue: String(platform)) else { throw APIError.invalid("platform must be one of \(DevicePlatform.allCases.map(\.rawValue).joined(separator: ", "))") }
            filter.platform = parsed
        }
        if let environment = query["environment"] {
            do throws(FieldError) {
                filter.environment = try JSONFields.environment(String(environment), at: "environment")
            } catch {
                throw APIError.invalid("environment \(error.message)")
            }
        }
        let limit = try GatewayAPI.limit(query["limit"])
        let cursor = try GatewayAPI.cursor(query["cursor"])
        let page = try await api.store.devices(app: app, filter: filter, limit: limit, after: cursor)
        return JSONBody.object { writer in
            writer.key("devices")
            writer.beginArray()
            for device in page.items {
                writer.beginObject()
                Self.write(device, defaultEnvironment: filter.defaultEnvironment, to: &writer)
                writer.endObject()
            }
            writer.endArray()
            writer.member("next", page.next)
        }
    }

    @Sendable func importDevices(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let format: DeviceImport.Format
        switch request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "application/x-ndjson", "application/ndjson", "application/jsonl": format = .lines
        case nil, "application/json": format = .array
        case let other?:
            throw APIError(.unsupportedMediaType, "unsupportedMediaType", "send application/json (an array) or application/x-ndjson (one device per line), not \(PeerText(other, limit: 64))")
        }
        let limits = api.configuration.limits
        let report = DeviceImport.Report(maximumErrors: limits.maximumImportErrors)
        let devices = DeviceImport(
            body: request.body, format: format, maximumElementSize: limits.maximumImportLineSize, maximumSize: limits.maximumImportSize, report: report,
            webPush: api.configuration.app(app)?.webPush, reaches: api.platforms(of: app), categories: api.configuration.app(app)?.categories ?? [:]
        )
        // 12,500 a transaction, one batch read (and its rows made) while the one before is
        // written: the size that kept an import's peak memory lowest for its speed
        // (docs/performance.md, "Measurements behind the code").
        var registered = 0
        let upserted: Int
        do {
            upserted = try await api.store.register(contentsOf: devices, app: app, batchSize: 12_500, progress: { registered = $0 })
        } catch let error as StoreError where error.code == .storageFull {
            // The batches written before stay registered: say how far the import got.
            context.logger.error("an import stopped: the database's disk is full", metadata: ["registered": "\(registered)", "error": "\(error)"])
            throw APIError.storageFull(stored: "the first \(registered) devices of this import were registered, the rest were not")
        } catch let error as StoreError where error.code == .unavailable {
            // The batch being written when the database went away may or may not have been committed.
            throw APIError.unavailable(stored: "at least the first \(registered) devices of this import were registered, perhaps not the rest")
        }
        if report.stoppedAtLimit {
            throw APIError(
                .contentTooLarge, "tooLarge",
                "the import is over \(limits.maximumImportSize) bytes (limits.maximumImportSize): the \(upserted) devices before that point were registered, the rest was not read; send it in another request"
            )
        }
        let (errors, errorCount) = report.errors
        return JSONBody.object { writer in
            writer.member("upserted", upserted)
            writer.member("errorCount", errorCount)
            writer.key("errors")
            writer.beginArray()
            for error in errors {
                writer.beginObject()
                writer.member("line", error.line)
                writer.member("message", error.message)
                writer.endObject()
            }
            writer.endArray()
        }
    }

    // MARK: Fields

    /// What a device object says of a device: a field left out keeps what is stored.
    struct DeviceFields {
        /// `user: null` clears the user.
        var user: String?? = nil
        var tags: Set<String>?
        var badge: Int?
        var kind: TokenKind?
        var activityType: String?
        var environment: TokenEnvironment?
        /// The platform whose token it is (`fcm`: an Android device's FCM registration token);
        /// none: an APNs token.
        var platform: DevicePlatform?
        /// An IANA time zone name (checked when parsed).
        var timeZone: String?
        /// A BCP 47 language tag; `""` clears the stored one (checked when parsed).
        var locale: String?
        /// The device's own choices per category, of the app's categories (checked when parsed); `[:]` clears them.
        var preferences: [String: Bool]?
        /// The device object as given, for the fields only its platform has
        /// (``GatewayPlatform/registrationFields``).
        var given: JSONFields?

        /// The registration its platform (APNs when none is given) makes of `token` and these
        /// fields. Locale and preferences are the same whatever the platform: set here, once.
        func registration(token: String) throws(StoreError) -> DeviceRegistration {
            var registration = try GatewayPlatforms.conformance(of: platform ?? .apns).registration(token: token, fields: self)
            try registration.setLocale(locale)
            try registration.setPreferences(preferences)
            return registration
        }
    }

    /// The token kinds, as the API names them.
    static let kinds = TokenKind.allCases.map(\.rawValue).joined(separator: ", ")

    /// The fields of a device's registration, and of an import's line (which names its token).
    private static let deviceFieldNames = ["user", "tags", "badge", "kind", "activityType", "environment", "platform", "timeZone", "locale", "preferences"]
    private static let importFieldNames = ["token"] + deviceFieldNames

    /// `user`, `tags`, `badge`, `kind`, `activityType`, `environment`, `platform`, `timeZone`,
    /// `locale` and `preferences` of a device object; preferences name the app's `categories`.
    static func deviceFields(_ fields: JSONFields, allowsToken: Bool, categories: [String: NotificationCategory]) throws(APIError) -> DeviceFields {
        do throws(FieldError) {
            try fields.only((allowsToken ? importFieldNames : deviceFieldNames) + GatewayPlatforms.registrationFields)
            var device = DeviceFields()
            device.user = fields.has("user") ? .some(try fields.string("user")) : nil
            device.tags = try fields.strings("tags").map(Set.init)
            device.badge = try fields.int("badge")
            if let kind = try fields.string("kind") {
                guard let parsed = TokenKind(rawValue: kind) else { throw FieldError(fields.at("kind"), "must be one of \(kinds)") }
                device.kind = parsed
            }
            device.activityType = try fields.string("activityType")
            device.environment = try fields.environment("environment")
            device.timeZone = try fields.timeZone("timeZone")
            device.locale = try locale(fields)
            device.preferences = try preferences(fields, categories: categories)
            if let name = try fields.string("platform") {
                guard let platform = DevicePlatform(rawValue: name) else {
                    throw FieldError(fields.at("platform"), "must be \(GatewayPlatforms.registeredByToken.joined(separator: " or ")) (apns by default)")
                }
                if let route = GatewayPlatforms.registrationRoute(of: platform) {
                    throw FieldError(fields.at("platform"), "a device of \(platform) registers at \(route)")
                }
                device.platform = platform
            }
            try GatewayPlatforms.checkRegistrationFields(fields, platform: device.platform ?? .apns)
            device.given = fields
            return device
        } catch {
            throw error.apiError
        }
    }

    /// `locale`: a BCP 47 tag as the device reports it (`pt-BR`, `pt_BR`), or `""` to clear it;
    /// `nil` when absent or `null`.
    static func locale(_ fields: JSONFields) throws(FieldError) -> String? {
        guard let tag = try fields.string("locale") else { return nil }
        guard tag.isEmpty || DeviceRegistration.isLocale(tag) else {
            throw FieldError(
                fields.at("locale"),
                "\(String(reflecting: PeerText(tag, limit: 64).description)) is not a BCP 47 language tag (en, pt-BR, zh-Hant-TW), at most \(DeviceRegistration.maximumLocaleLength) bytes; \"\" clears it"
            )
        }
        return tag
    }

    /// `preferences`: the device's own choice per category (`{"marketing": false}`), each one of
    /// the app's `categories` and not transactional; `{}` clears them, `nil` when absent or `null`.
    static func preferences(_ fields: JSONFields, categories: [String: NotificationCategory]) throws(FieldError) -> [String: Bool]? {
        guard let given = try fields.object("preferences") else { return nil }
        guard given.members.count <= DeviceRegistration.maximumPreferences else {
            throw FieldError(given.path, "at most \(DeviceRegistration.maximumPreferences) categories")
        }
        var choices: [String: Bool] = [:]
        for name in given.members.keys.sorted() {
            try PreferenceRoutes.checkCategory(name, in: categories, at: given)
            guard let enabled = try given.bool(name) else { throw FieldError(given.at(name), "must be true or false") }
            choices[name] = enabled
        }
        return choices
    }

    static func token(_ context: GatewayContext) throws -> String {
        try tokens(context)[0]
    }

    /// The device IDs the path's token may stand for, most likely first: an ID as it is, an APNs
    /// token, else each platform whose token it could be (an FCM registration token and a Huawei
    /// push token can look alike: the caller tries each, and the one registered is the device).
    static func tokens(_ context: GatewayContext) throws -> [String] {
        let text = try context.parameters.require("token")
        // A device whose address is not its ID (a browser's subscription, an Android device), by its ID.
        if GatewayPlatforms.isDeviceID(text) { return [text] }
        do {
            return [try DeviceToken(text).hex]
        } catch {
            // A device by its platform's token (an Android device by its registration token).
            let ids = GatewayPlatforms.all.compactMap { $0.deviceID(forToken: text) }
            guard !ids.isEmpty else { throw APIError.invalid("device token: \(error.detail ?? error.reason.rawValue)") }
            return ids
        }
    }

    /// A device as the API shows it; one registered without an environment is in the app's.
    static func write(_ device: Device, defaultEnvironment: TokenEnvironment, to writer: inout JSONWriter) {
        writer.member("token", device.token)
        writer.member("user", device.user)
        writer.key("tags")
        writer.strings(device.tags.sorted())
        writer.member("badge", device.badge)
        writer.member("status", device.status.rawValue)
        writer.member("reason", device.reason)
        writer.member("invalidatedAt", device.invalidatedAt)
        writer.member("createdAt", device.createdAt)
        writer.member("updatedAt", device.updatedAt)
        writer.member("kind", device.kind.rawValue)
        if let activityType = device.activityType { writer.member("activityType", activityType) }
        if let timeZone = device.timeZone { writer.member("timeZone", timeZone) }
        if let locale = device.locale { writer.member("locale", locale) }
        if !device.preferences.isEmpty {
            writer.key("preferences")
            writer.beginObject()
            for (name, enabled) in device.preferences.sorted(by: { $0.key < $1.key }) {
                writer.key(name)
                writer.bool(enabled)
            }
            writer.endObject()
        }
        writer.member("platform", device.platform.rawValue)
        GatewayPlatforms.conformance(of: device.platform).writeFields(of: device, defaultEnvironment: defaultEnvironment, to: &writer)
    }
}
