import HeraldCore
import HeraldIdentity
import HeraldStore
import Hummingbird

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `/v1/admin/apps…`: apps defined through the API, for an admin key only. An app's definition is
/// an `apps[]` entry of the configuration file with its secrets inline, checked by the file's
/// parser, sealed with the credentials key and stored; every process sharing the store puts it in
/// force within about a second (``StoredAppsWatcher``), this one before it answers. The file
/// wins: an app it defines is not defined, replaced or deleted here. No route answers with a
/// secret, and none is logged.
struct AdminRoutes {
    let api: GatewayAPI

    func add(to group: RouterGroup<GatewayContext>) {
        group.get("admin/apps", use: list)
        group.put("admin/apps/:app", use: put)
        group.get("admin/apps/:app", use: read)
        group.delete("admin/apps/:app", use: delete)
        group.post("admin/apps/:app/keys", use: makeKey)
        group.delete("admin/apps/:app/keys/:name", use: deleteKey)
    }

    /// Every app: the file's and the API's, in ID order (an ID both define: both, the API's not in force).
    @Sendable func list(request: Request, context: GatewayContext) async throws -> Response {
        let (sources, keys) = try authorizeSealing(context)
        await sources.refresh()
        let catalog = try await api.store.appCatalog()
        var entries = sources.file.apps.map { AppEntry(app: $0, summary: nil) }
        for summary in catalog.definitions where summary.deletingSince == nil {
            // One that this process cannot read is listed without platforms or credentials (its
            // own GET says why), not in force.
            let app = (try? await storedApp(summary, sources: sources, keys: keys)) ?? GatewayConfiguration.App(id: summary.id)
            entries.append(AppEntry(app: app, summary: summary))
        }
        entries.sort { ($0.app.id, $0.summary == nil ? 0 : 1) < ($1.app.id, $1.summary == nil ? 0 : 1) }
        return JSONBody.object { writer in
            writer.key("apps")
            writer.beginArray()
            for entry in entries { write(entry, keys: catalog.keys, to: &writer) }
            writer.endArray()
        }
    }

    @Sendable func read(request: Request, context: GatewayContext) async throws -> Response {
        let (sources, keys) = try authorizeSealing(context)
        let id = try appID(context)
        await sources.refresh()
        let catalog = try await api.store.appCatalog()
        let entry: AppEntry
        if let app = sources.file.app(id) {
            entry = AppEntry(app: app, summary: nil)
        } else if let summary = catalog.definitions.first(where: { $0.id == id && $0.deletingSince == nil }) {
            entry = AppEntry(app: try await storedApp(summary, sources: sources, keys: keys), summary: summary)
        } else {
            throw APIError.notFound("no app '\(id)' in the configuration file or defined through the API")
        }
        return JSONBody.object { writer in writeMembers(entry, keys: catalog.keys, to: &writer) }
    }

    /// Defines the app (201) or replaces its definition (200).
    @Sendable func put(request: Request, context: GatewayContext) async throws -> Response {
        let (sources, keys) = try authorizeSealing(context)
        let id = try appID(context)
        try refuseFileApp(id, sources: sources, doing: "defined here")
        let fields = try await JSONBody.object(of: request, limit: GatewayConfiguration.App.maximumDefinitionSize)
        let document = JSONValue.object(fields.members)
        var app: GatewayConfiguration.App
        do {
            app = try GatewayConfiguration.App(id: id, definition: document)
            try Self.checkCertificates(in: document)
            try checkMatrix(app)
        } catch {
            throw error.apiError
        }
        app.source = .api
        let sealed: [UInt8]
        do {
            sealed = try keys.seal(GatewayConfiguration.App.definitionText(of: document, id: id), app: id)
        } catch {
            throw APIError(.internalServerError, "internal", "the definition could not be sealed; it is logged")
        }
        let (summary, created) = try await api.store.putAppDefinition(id: id, sealed: sealed, sealedWith: keys.current.fingerprint)
        // In force in this process before the answer; in the others within a poll.
        await sources.refresh()
        context.logger.notice(created ? "app defined through the admin API" : "app replaced through the admin API", metadata: ["app": "\(id)"])
        let catalog = try await api.store.appCatalog()
        return JSONBody.object(created ? .created : .ok) { writer in writeMembers(AppEntry(app: app, summary: summary), keys: catalog.keys, to: &writer) }
    }

    /// Deletes the app and every row of it: its unfinished notifications are cancelled first
    /// (what a worker has in flight may still reach its device), then its devices,
    /// notifications, deliveries, activities, channels, webhook events and keys go.
    @Sendable func delete(request: Request, context: GatewayContext) async throws -> Response {
        let sources = try authorize(context)
        let id = try appID(context)
        try refuseFileApp(id, sources: sources, doing: "deleted here (its devices and notifications stay while the file defines it)")
        guard try await api.store.appDefinition(id: id) != nil else {
            throw APIError.notFound("no app '\(id)' defined through the API")
        }
        let deletion = try await api.store.deleteApp(id)
        await sources.refresh()
        context.logger.notice(
            "app deleted through the admin API",
            metadata: ["app": "\(id)", "cancelled": "\(deletion.cancelledNotifications)", "devices": "\(deletion.devices)", "notifications": "\(deletion.notifications)"]
        )
        return JSONBody.object { writer in
            writer.member("id", id)
            writer.member("cancelledNotifications", deletion.cancelledNotifications)
            writer.member("deletedNotifications", deletion.notifications)
            writer.member("deletedDevices", deletion.devices)
        }
    }

    /// Makes a key for the app (the file's or the API's), shown once in the answer.
    @Sendable func makeKey(request: Request, context: GatewayContext) async throws -> Response {
        let sources = try authorize(context)
        let id = try appID(context)
        let stored = try await api.store.appDefinition(id: id)
        guard sources.file.app(id) != nil || (stored != nil && stored?.deletingSince == nil) else {
            throw APIError.notFound("no app '\(id)' in the configuration file or defined through the API")
        }
        let fields = try await JSONBody.object(of: request, limit: api.configuration.limits.maximumBodySize)
        let name: String
        do throws(FieldError) {
            try fields.only(["name"])
            name = try fields.requiredString("name")
            guard name.utf8.count <= 64, PeerText.isSafe(name) else { throw FieldError("name", "must be 1 to 64 printable characters") }
        } catch {
            throw error.apiError
        }
        let (key, entry) = APIKey.generate(name: name, apps: [id])
        let made = Date()
        do {
            try await api.store.addAppKey(StoredAppKey(app: id, name: name, sha256: entry.sha256, createdAt: made))
        } catch let error as StoreError where error.code == .conflict {
            throw APIError(.conflict, "conflict", "app \(id) has a key named '\(name)' already: delete it first, or choose another name")
        }
        await sources.refresh()
        context.logger.notice("API key made through the admin API", metadata: ["app": "\(id)", "name": "\(name)"])
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.member("app", id)
        writer.member("name", name)
        writer.member("key", key)
        writer.member("sha256", entry.sha256Hex)
        writer.member("createdAt", made)
        writer.endObject()
        // Shown once: no cache keeps it.
        return JSONBody.response(.created, writer, headers: [.cacheControl: "no-store"])
    }

    @Sendable func deleteKey(request: Request, context: GatewayContext) async throws -> Response {
        let sources = try authorize(context)
        let id = try appID(context)
        let name = try context.parameters.require("name")
        guard try await api.store.deleteAppKey(app: id, name: name) else {
            throw APIError.notFound("app \(id) has no key named '\(PeerText(name, limit: 64))' made through the API")
        }
        await sources.refresh()
        context.logger.notice("API key deleted through the admin API", metadata: ["app": "\(id)", "name": "\(name)"])
        return JSONBody.object { writer in
            writer.member("app", id)
            writer.member("name", name)
        }
    }

    // MARK: Checks

    /// The app sources, for an admin key only.
    private func authorize(_ context: GatewayContext) throws -> AppSources {
        guard context.apiKey?.isAdmin == true else {
            throw APIError(
                .forbidden, "forbidden",
                "the admin routes take an admin key (\"admin\": true in the configuration file's apiKeys; herald api-key --admin makes one); an app key may use its apps' routes only"
            )
        }
        guard let sources = api.sources else { throw APIError(.serviceUnavailable, "unavailable", "this process does not define apps") }
        return sources
    }

    /// The app sources and the keys that seal and open definitions, for an admin key only: a 409
    /// saying how to set one when the gateway has none (nothing is ever stored in clear).
    private func authorizeSealing(_ context: GatewayContext) throws -> (sources: AppSources, keys: CredentialsKeys) {
        let sources = try authorize(context)
        guard let keys = sources.keys else {
            throw APIError(
                .conflict, "credentialsKeyNotSet",
                "this gateway has no credentials key, so it stores no app's credentials: set \(CredentialsKeys.howToMake), on every process, and restart them"
            )
        }
        return (sources, keys)
    }

    private func appID(_ context: GatewayContext) throws -> String {
        let id = try context.parameters.require("app")
        guard GatewayConfiguration.App.isValidID(id) else {
            throw APIError.invalid("app: '\(PeerText(id, limit: 64))' must be 1 to 64 of a-z 0-9 . _ - (it is part of the API's paths)")
        }
        return id
    }

    /// A 409 for an app the configuration file defines: the file wins.
    private func refuseFileApp(_ id: String, sources: AppSources, doing: String) throws {
        guard sources.file.app(id) != nil else { return }
        throw APIError(
            .conflict, "definedInFile",
            "app \(id) is defined in the configuration file, which wins over the API: it is not \(doing); change the file (and SIGHUP), or remove it from the file to manage it here"
        )
    }

    /// Refuses a certificate that has expired or is not valid yet, naming its field. (Stored
    /// definitions are not checked again when read: an app whose certificate expires later keeps
    /// its other platforms.)
    static func checkCertificates(in document: JSONValue, now: Date = Date()) throws(FieldError) {
        for (path, value) in certificates(in: document) {
            let fields = try JSONFields(value, path: path, credentials: .inline)
            guard case .certificate(let identity) = try GatewayConfiguration.App.inlineCertificate(fields) else { continue }
            do {
                _ = try identity.checkValidity(at: now)
            } catch {
                throw FieldError(path, error.message)
            }
        }
    }

    /// Each certificate object a definition gives, by path: the app's own (in `apns` or at its
    /// top level) and those per kind and per environment.
    private static func certificates(in document: JSONValue) -> [(String, JSONValue)] {
        var found: [(String, JSONValue)] = []
        let roots: [(String, JSONValue?)] = [("apns", document["apns"]), ("", document)]
        for (prefix, root) in roots {
            guard let root else { continue }
            let at = { (name: String) in prefix.isEmpty ? name : "\(prefix).\(name)" }
            if let certificate = root["certificate"], case .object = certificate { found.append((at("certificate"), certificate)) }
            for group in ["credentialsByKind", "credentialsByEnvironment"] {
                guard case .object(let entries)? = root[group] else { continue }
                for (name, entry) in entries.sorted(by: { $0.key < $1.key }) {
                    if let certificate = entry["certificate"], case .object = certificate { found.append(("\(at(group)).\(name).certificate", certificate)) }
                }
            }
        }
        return found
    }

    /// A Matrix app ID leads to one app: refused when another app in force has it.
    private func checkMatrix(_ app: GatewayConfiguration.App) throws(FieldError) {
        guard let matrix = app.matrix else { return }
        for other in api.configuration.apps where other.id != app.id {
            for appID in matrix.appIDs.keys.sorted() where other.matrix?.appIDs[appID] != nil {
                throw FieldError("matrix.appIds.\(appID)", "is app \(other.id)'s already: a Matrix app ID leads to one app")
            }
        }
    }

    // MARK: Answers

    /// An app as listed, and its definition's times when the API defines it.
    private struct AppEntry {
        var app: GatewayConfiguration.App
        var summary: AppDefinitionSummary?
    }

    /// A stored app: this process's copy when it is of the same definition, else opened now.
    private func storedApp(_ summary: AppDefinitionSummary, sources: AppSources, keys: CredentialsKeys) async throws -> GatewayConfiguration.App {
        if let known = sources.stored.apps[summary.id], known.summary == summary { return known.app }
        guard let definition = try await api.store.appDefinition(id: summary.id) else {
            throw APIError.notFound("no app '\(summary.id)' defined through the API")
        }
        do {
            return try AppSources.open(definition, with: keys)
        } catch {
            // Which key sealed it and why it does not open; never a secret.
            throw APIError(.serviceUnavailable, "unavailable", "app \(summary.id)'s definition cannot be read here: \(error)")
        }
    }

    private func write(_ entry: AppEntry, keys: [StoredAppKey], to writer: inout JSONWriter) {
        writer.beginObject()
        writeMembers(entry, keys: keys, to: &writer)
        writer.endObject()
    }

    /// An app's ID, where it is defined and whether that is in force here, what it reaches and
    /// with which credentials (described, never a secret), its times and its keys' names.
    private func writeMembers(_ entry: AppEntry, keys: [StoredAppKey], to writer: inout JSONWriter) {
        let app = entry.app
        let source: GatewayConfiguration.AppSource = entry.summary == nil ? .file : .api
        writer.member("id", app.id)
        writer.member("source", source.rawValue)
        writer.key("inForce")
        writer.bool(api.configuration.app(app.id)?.source == source)
        writer.key("platforms")
        writer.beginArray()
        let platforms = app.platforms
        for platform in DevicePlatform.allCases where platforms.contains(platform) { writer.string(platform.rawValue) }
        writer.endArray()
        writer.member("topic", app.topic)
        writer.key("credentials")
        writer.beginObject()
        for (name, description) in app.credentialDescriptions { writer.member(name, description) }
        writer.endObject()
        writer.member("createdAt", entry.summary?.createdAt)
        writer.member("updatedAt", entry.summary?.updatedAt)
        writer.key("keys")
        writer.beginArray()
        for key in keys where key.app == app.id {
            writer.beginObject()
            writer.member("name", key.name)
            writer.member("createdAt", key.createdAt)
            writer.endObject()
        }
        writer.endArray()
    }
}

extension GatewayConfiguration.App {
    /// Each credential the app sends with, described as logs name them, by platform (and kind or
    /// environment for APNs's own): never a secret.
    var credentialDescriptions: [(String, String)] {
        var described: [(String, String)] = []
        if let credentials { described.append(("apns", Self.describe(credentials))) }
        for kind in TokenKind.allCases { if let credentials = credentialsByKind[kind] { described.append(("apns.\(kind.rawValue)", Self.describe(credentials))) } }
        for environment in TokenEnvironment.allCases {
            if let credentials = credentialsByEnvironment[environment] { described.append(("apns.\(environment.rawValue)", Self.describe(credentials))) }
        }
        if let webPush { described.append(("webpush", "VAPID key for \(webPush.subject)")) }
        if let fcm { described.append(("fcm", "service account \(fcm.serviceAccount.clientEmail) of project \(fcm.serviceAccount.projectID)")) }
        if let hms {
            var parts: [String] = []
            if let client = hms.app { parts.append("OAuth client \(client.clientID)") }
            if let account = hms.serviceAccount { parts.append("service account \(account.subAccount) of project \(account.projectID)") }
            described.append(("hms", parts.joined(separator: " and ")))
        }
        return described
    }
}
