import HeraldCore
import HeraldStore
import Hummingbird

/// `/v1/apps/{app}/templates…`: an app's localized templates (``NotificationTemplate``), stored
/// by name and versioned; a notification names one and gives its variables. A preview renders one
/// as a device of a locale would get it, for the console.
struct TemplateRoutes {
    let api: GatewayAPI

    func add(to group: RouterGroup<GatewayContext>) {
        group.put("apps/:app/templates/:name", use: put)
        group.get("apps/:app/templates", use: list)
        group.get("apps/:app/templates/:name", use: read)
        group.delete("apps/:app/templates/:name", use: delete)
        group.post("apps/:app/templates/:name/preview", use: preview)
    }

    /// The largest body a template is read from: its stored form (``NotificationTemplate/maximumEncodedSize``)
    /// with room for the sender's whitespace and escapes.
    static let maximumBodySize = 4 * NotificationTemplate.maximumEncodedSize
    /// The most templates a page lists, and how many when not told.
    static let maximumPage = 100
    static let defaultPage = 50

    @Sendable func put(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let name = try Self.name(context)
        let fields = try await JSONBody.object(of: request, limit: min(Self.maximumBodySize, api.configuration.limits.maximumBodySize))
        let template: NotificationTemplate
        do throws(FieldError) {
            template = try NotificationTemplate.parse(.object(fields.members))
        } catch {
            throw error.apiError
        }
        let stored = try await api.store.putTemplate(app: app, name: name, body: template.encoded())
        context.logger.info("template stored", metadata: ["app": "\(app)", "template": "\(name)", "version": "\(stored.version)"])
        return JSONBody.object { Self.write(stored, template, to: &$0) }
    }

    @Sendable func list(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let query = request.uri.queryParameters
        let limit = try GatewayAPI.wholeNumber(query["limit"], "limit", in: 1...Self.maximumPage, default: Self.defaultPage)
        // `after` names the last template of the page before; `cursor` is the same, as other lists take it.
        let after = try GatewayAPI.cursor(query["after"] ?? query["cursor"])
        let page = try await api.store.templates(app: app, limit: limit, after: after)
        let templates = try page.items.map { stored in (stored, try Self.parsed(stored)) }
        return JSONBody.object { writer in
            writer.key("templates")
            writer.beginArray()
            for (stored, template) in templates {
                writer.beginObject()
                Self.write(stored, template, to: &writer)
                writer.endObject()
            }
            writer.endArray()
            writer.member("next", page.next)
        }
    }

    @Sendable func read(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let stored = try await storedTemplate(app, context)
        let template = try Self.parsed(stored)
        return JSONBody.object { Self.write(stored, template, to: &$0) }
    }

    @Sendable func delete(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let name = try Self.name(context)
        guard try await api.store.deleteTemplate(app: app, name: name) else { throw Self.notFound(app, name) }
        return Response(status: .noContent)
    }

    /// `{"locale": "de-AT", "data": {…}, "payload": {…}}`: the template as a device of that
    /// locale would get it, the app's default language standing in as it does when sending:
    /// the APNs payload, and the `webPush` and `fcm` options the variant sets, shaped as a
    /// notification's fields of those names.
    @Sendable func preview(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        let stored = try await storedTemplate(app, context)
        let fields = try await JSONBody.optionalObject(of: request, limit: api.configuration.limits.maximumBodySize)
        var locale: String?
        var variables: [String: JSONValue] = [:]
        var payload: [UInt8] = Array("{}".utf8)
        if let fields {
            do throws(FieldError) {
                try fields.only(["locale", "data", "payload"])
                locale = try fields.string("locale")
                if let locale, !DeviceRegistration.isLocale(locale) {
                    throw FieldError("locale", "\(String(reflecting: PeerText(locale, limit: 64).description)) is not a BCP 47 language tag (en, pt-BR, zh-Hant-TW)")
                }
                variables = try fields.object("data")?.members ?? [:]
                if let base = try fields.object("payload") {
                    var writer = JSONWriter(capacity: 256)
                    writer.value(.object(base.members))
                    payload = writer.bytes
                }
            } catch {
                throw error.apiError
            }
        }
        let template = try Self.parsed(stored)
        let rendered: RenderedMessage
        do throws(TemplateError) {
            rendered = try template.render(
                locale: locale, appLanguage: api.configuration.app(app)?.defaultLanguage, variables: variables, payload: payload, platformOptions: [:])
        } catch {
            throw APIError.invalid(error.message)
        }
        return JSONBody.object { writer in
            writer.member("language", rendered.language)
            writer.key("payload")
            writer.rawJSON(rendered.payload)
            if let options = rendered.platformOptions[.webpush] {
                writer.key("webPush")
                writer.rawJSON(options)
            }
            if let patch = rendered.platformOptions[.fcm] {
                // As a notification's `fcm` takes it: the merge patch is its `message`.
                writer.key("fcm")
                writer.beginObject()
                writer.key("message")
                writer.rawJSON(patch)
                writer.endObject()
            }
        }
    }

    // MARK: Helpers

    /// The template name in the path: 1 to 64 of `A-Z a-z 0-9 _ - .`.
    static func name(_ context: GatewayContext) throws -> String {
        let name = try context.parameters.require("name")
        guard StoredTemplate.isValidName(name) else {
            throw APIError.invalid("name: \(String(reflecting: PeerText(name, limit: 80).description)) must be 1 to \(StoredTemplate.maximumNameLength) of A-Z a-z 0-9 _ - .")
        }
        return name
    }

    static func notFound(_ app: String, _ name: String) -> APIError {
        APIError(.notFound, "templateNotFound", "app \(app) has no template \(name); PUT /v1/apps/\(app)/templates/\(name) stores one")
    }

    /// The template named in the path, if the app has it.
    private func storedTemplate(_ app: String, _ context: GatewayContext) async throws -> StoredTemplate {
        let name = try Self.name(context)
        guard let stored = try await api.store.template(app: app, name: name) else { throw Self.notFound(app, name) }
        return stored
    }

    /// A stored template read back. It was checked when stored; one that no longer parses (the
    /// engine's bounds tightened since) answers a 500, logged.
    static func parsed(_ stored: StoredTemplate) throws -> NotificationTemplate {
        try NotificationTemplate.parse(try JSONValue(parsing: stored.body))
    }

    /// A template as the API shows it: its version and what it uses, and the template itself as stored.
    static func write(_ stored: StoredTemplate, _ template: NotificationTemplate, to writer: inout JSONWriter) {
        writer.member("name", stored.name)
        writer.member("version", stored.version)
        writer.member("defaultLanguage", template.defaultLanguage)
        writer.key("languages")
        writer.strings(template.variants.keys.sorted())
        writer.key("variables")
        writer.strings(template.variables)
        writer.key("requiredVariables")
        writer.strings(template.requiredVariables)
        writer.key("template")
        writer.rawJSON(stored.body)
        writer.member("updatedAt", stored.updatedAt)
    }
}
