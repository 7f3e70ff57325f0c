import HeraldCore
import HeraldStore
import Hummingbird

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
        var user: String?? = nil
        var tags: Set<String>?
        var badge: Int?
        // The body is optional: an empty one registers the token as it is.
        if let fields = try await JSONBody.optionalObject(of: request, limit: api.configuration.limits.maximumBodySize) {
            (user, tags, badge) = try Self.deviceFields(fields, allowsToken: false)
        }
        let registration = try DeviceRegistration(token: token, user: user, tags: tags, badge: badge)
        let (device, created) = try await api.store.register(registration, app: app)
        return JSONBody.object(created ? .created : .ok) { Self.write(device, to: &$0) }
    }

    @Sendable func read(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let token = try Self.token(context)
        guard let device = try await api.store.device(app: app, token: token) else {
            throw APIError.notFound("no device \(token) is registered with \(app)")
        }
        return JSONBody.object { Self.write(device, to: &$0) }
    }

    @Sendable func delete(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let token = try Self.token(context)
        guard try await api.store.deleteDevice(app: app, token: token) else {
            throw APIError.notFound("no device \(token) is registered with \(app)")
        }
        return Response(status: .noContent)
    }

    @Sendable func list(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let query = request.uri.queryParameters
        var filter = DeviceFilter()
        if let status = query["status"] {
            guard let parsed = DeviceStatus(rawValue: String(status)) else {
                throw APIError.invalid("status must be active, unregistered or invalid")
            }
            filter.status = parsed
        }
        if let user = query["user"] {
            // The same rule as registering one: it is a SQL parameter.
            guard !user.isEmpty, user.utf8.count <= DeviceRegistration.maximumUserLength, PeerText.isSafe(user) else {
                throw APIError.invalid("user must be 1 to \(DeviceRegistration.maximumUserLength) bytes without control characters")
            }
            filter.user = String(user)
        }
        if let tag = query["tag"] {
            guard DeviceRegistration.isValidTag(String(tag)) else { throw APIError.invalid("tag: 1 to 64 of A-Z a-z 0-9 . _ : -") }
            filter.tag = String(tag)
        }
        let limit = try GatewayAPI.limit(query["limit"])
        let cursor = try GatewayAPI.cursor(query["cursor"])
        let page = try await api.store.devices(app: app, filter: filter, limit: limit, after: cursor)
        return JSONBody.object { writer in
            writer.key("devices")
            writer.beginArray()
            for device in page.items {
                writer.beginObject()
                Self.write(device, to: &writer)
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
            body: request.body, format: format, maximumElementSize: limits.maximumImportLineSize, maximumSize: limits.maximumImportSize, report: report
        )
        // 25,000 a transaction: 300,000 devices in 6.6 s with a peak of 117 MiB (10,000: 9.9 s,
        // 93 MiB; 50,000: 5.1 s, 139 MiB), one batch read while the one before is written.
        let upserted = try await api.store.register(contentsOf: devices, app: app, batchSize: 25_000)
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

    /// `user`, `tags` and `badge` of a device object; `user: null` clears the user.
    static func deviceFields(_ fields: JSONFields, allowsToken: Bool) throws(APIError) -> (user: String??, tags: Set<String>?, badge: Int?) {
        do {
            try fields.only(allowsToken ? ["token", "user", "tags", "badge"] : ["user", "tags", "badge"])
            let user: String?? = fields.has("user") ? .some(try fields.string("user")) : nil
            return (user, try fields.strings("tags").map(Set.init), try fields.int("badge"))
        } catch {
            throw error.apiError
        }
    }

    static func token(_ context: GatewayContext) throws -> String {
        let text = try context.parameters.require("token")
        do {
            return try DeviceToken(text).hex
        } catch {
            throw APIError.invalid("device token: \(error.detail ?? error.reason.rawValue)")
        }
    }

    static func write(_ device: Device, to writer: inout JSONWriter) {
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
    }
}
