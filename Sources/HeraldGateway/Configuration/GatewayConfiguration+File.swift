import HeraldAPNS
import HeraldCore
import HeraldIdentity
import HeraldFCM
import HeraldStore
import HeraldWebPush
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A configuration file that cannot be used: which file, which field, and what is wrong with it.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    /// The field, as a path: `apps[0].authKey.keyID`; empty for the file as a whole.
    public var field: String
    public var message: String

    public init(file: String, field: String, message: String) {
        self.file = file
        self.field = field
        self.message = message
    }

    public var description: String { field.isEmpty ? "\(file): \(message)" : "\(file): \(field): \(message)" }
}

extension GatewayConfiguration {
    /// The largest configuration file read: room for tens of thousands of apps' entries (10,000
    /// apps with a provider key each take about 3 MiB).
    static let maximumFileSize = 64 << 20

    /// The largest file an app's entry names (a key, a certificate, a CA) that its revision reads.
    static let maximumAppFileSize = 1 << 20

    /// Reads a configuration file (the format is in the README's gateway section). Key,
    /// certificate and CA files are read now, relative to the configuration file's directory.
    ///
    /// - Parameter environment: where `passwordEnv` names are looked up; the process's by default.
    /// - Throws: ``ConfigurationError`` naming the file, the field and what is wrong.
    public static func load(file: String, environment: [String: String]? = nil) throws(ConfigurationError) -> GatewayConfiguration {
        let bytes: [UInt8]
        do {
            bytes = try FileContents.read(file, limit: maximumFileSize)
        } catch {
            throw ConfigurationError(file: file, field: "", message: error.reason)
        }
        let directory = file.contains("/") ? String(file[...file.lastIndex(of: "/")!]) : ""
        do {
            return try GatewayConfiguration(json: bytes, directory: directory, environment: environment ?? processEnvironment())
        } catch {
            throw ConfigurationError(file: file, field: error.path, message: error.message)
        }
    }

    /// A configuration from the JSON text of a file; relative file names are resolved against
    /// `directory` (empty or ending in `/`).
    init(json bytes: [UInt8], directory: String, environment: [String: String]) throws(FieldError) {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw FieldError("", "not valid JSON: \(error)")
        }
        let root = try JSONFields(document, path: "")
        try root.only(["listen", "database", "apps", "apiKeys", "queue", "workers", "limits", "housekeeping", "tls", "webhookSender", "metrics", "credentialsKeyFile"])
        let databaseText = try root.requiredString("database")
        let database: StoreURL
        do {
            database = try StoreURL(databaseText).withPassword(from: environment)
        } catch {
            throw FieldError("database", error.message)
        }
        var apps: [App] = []
        var ids: Set<String> = []
        for fields in try root.objects("apps") {
            let app = try App(fields, directory: directory, environment: environment)
            guard ids.insert(app.id).inserted else { throw FieldError(fields.at("id"), "'\(app.id)' is given twice") }
            apps.append(app)
        }
        guard !apps.isEmpty else { throw FieldError("apps", "at least one app is needed") }
        try Self.readMatrix(into: &apps, from: try root.objects("apps"))
        var keys: [APIKey] = []
        for fields in try root.objects("apiKeys") {
            let key = try APIKey(fields, apps: Set(apps.map(\.id)))
            guard !keys.contains(where: { $0.name == key.name }) else { throw FieldError(fields.at("name"), "'\(key.name)' is given twice") }
            guard !keys.contains(where: { $0.sha256 == key.sha256 }) else { throw FieldError(fields.at("sha256"), "the same key is given twice") }
            keys.append(key)
        }
        self.init(database: database, apps: apps, apiKeys: keys)
        if let listen = try root.string("listen") {
            do {
                self.listen = try ListenAddress(parsing: listen)
            } catch {
                throw FieldError("listen", error.message)
            }
        }
        if let queue = try root.object("queue") { self.queue = try QueueSettings(queue) }
        // A cap counts what was sent within its window; what is older than the retention is forgotten.
        let retention = Int(self.queue.retention.components.seconds)
        for (index, app) in self.apps.enumerated() {
            if let lifetime = app.receipts.lifetimeSeconds, lifetime > retention {
                throw FieldError(
                    "apps[\(index)].receipts.lifetimeSeconds",
                    "must be at most the queue's retention (queue.retentionSeconds, \(retention)): a receipt for a notification no longer kept is refused")
            }
            for (name, category) in app.categories.sorted(by: { $0.key < $1.key }) {
                if let cap = category.caps.firstIndex(where: { $0.windowSeconds > retention }) {
                    throw FieldError(
                        "apps[\(index)].categories.\(name).caps[\(cap)].windowSeconds",
                        "must be at most the queue's retention (queue.retentionSeconds, \(retention)): what is older is forgotten")
                }
            }
        }
        if let workers = try root.object("workers") { self.workers = try WorkerSettings(workers) }
        if let limits = try root.object("limits") { self.limits = try APILimits(limits) }
        if let housekeeping = try root.object("housekeeping") { self.housekeeping = try HousekeepingSettings(housekeeping) }
        if let sender = try root.object("webhookSender") { self.webhookSender = try WebhookSenderSettings(sender) }
        credentialsKeys = try CredentialsKeys.load(file: try root.string("credentialsKeyFile").map { App.resolve($0, in: directory) }, environment: environment)
        if let metrics = try root.object("metrics") {
            try metrics.only(["maximumAppLabels"])
            if let limit = try metrics.int("maximumAppLabels") {
                guard (0...100_000).contains(limit) else { throw FieldError(metrics.at("maximumAppLabels"), "must be 0 to 100000") }
                self.metrics.maximumAppLabels = limit
            }
        }
        if let tls = try root.object("tls") {
            try tls.only(["certificateFile", "keyFile"])
            let files = APITLSIdentity.Files(
                certificateFile: App.resolve(try tls.requiredString("certificateFile"), in: directory),
                keyFile: App.resolve(try tls.requiredString("keyFile"), in: directory)
            )
            do {
                self.tls = try APITLSIdentity(files: files)
            } catch {
                throw FieldError("tls", error.description)
            }
        }
    }

    private static func processEnvironment() -> [String: String] {
        var environment: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return environment
    }
}

extension GatewayConfiguration.App {
    /// How an app reaches the platforms other than APNs: "and/or webPush {…} to reach browsers, …".
    static var otherPlatformsHint: String {
        GatewayPlatforms.all.compactMap { platform in platform.configurationKey.map { "and/or \($0) \(platform.configurationHint)" } }
            .joined(separator: ", ")
    }

    /// The fields of `apps[].apns`, which an app may also give at its top level (the form
    /// before 0.x's platforms were equal; still read).
    static let apnsFields = [
        "topic", "environment", "environments", "authKey", "certificate", "credentialsByKind", "credentialsByEnvironment", "caFile", "caPem",
        "connections",
    ]

    /// One entry of `credentialsByKind` or `credentialsByEnvironment`: `"authKey"` or
    /// `"certificate"` (the app's own), or `{"authKey": {…}}` / `{"certificate": {…}}` of its own.
    static func credentialEntry(
        _ entries: JSONFields, _ name: String, authKey: APNSCredentials?, certificate: APNSCredentials?, directory: String, environment: [String: String]
    ) throws(FieldError) -> APNSCredentials {
        switch entries.members[name] {
        case .string("authKey")?:
            guard let authKey else { throw FieldError(entries.at(name), "names authKey, which this app does not have") }
            return authKey
        case .string("certificate")?:
            guard let certificate else { throw FieldError(entries.at(name), "names certificate, which this app does not have") }
            return certificate
        case .object?:
            let entry = try entries.object(name)!
            try entry.only(["authKey", "certificate"])
            switch (try entry.object("authKey"), try entry.object("certificate")) {
            case (let key?, nil): return try Self.providerKey(key, directory: directory)
            case (nil, let file?): return try Self.certificate(file, directory: directory, environment: environment)
            default: throw FieldError(entry.path, "give one of authKey {file, keyID, teamID} or certificate {file, passwordEnv}")
            }
        default:
            throw FieldError(entries.at(name), "must be \"authKey\", \"certificate\" (the app's own) or {\"certificate\": {…}} / {\"authKey\": {…}}")
        }
    }

    init(_ fields: JSONFields, directory: String, environment: [String: String]) throws(FieldError) {
        let platformKeys = GatewayPlatforms.all.compactMap { $0.configurationKey }
        try fields.only(
            ["id", "apns", "defaultTimeZone", "quietHours", "maximumRatePerSecond", "webhooks", "matrix", "staleDeviceDays", "categories", "defaultLanguage", "receipts"]
                + platformKeys + Self.apnsFields)
        let id = try fields.requiredString("id")
        guard Self.isValidID(id) else { throw FieldError(fields.at("id"), "must be 1 to 64 of a-z 0-9 . _ - (it is part of the API's paths)") }
        // How the app reaches APNs: `apns`, beside `webPush` and `fcm`; or, as before, the same
        // fields at the app's top level (not both).
        let flat = Self.apnsFields.filter(fields.has)
        let apns: JSONFields?
        if let nested = try fields.object("apns") {
            if let first = flat.first {
                throw FieldError(fields.at(first), "is an APNs setting: give it inside apns with the others (an app gives them in apns or at its top level, not both)")
            }
            try nested.only(Self.apnsFields)
            apns = nested
        } else if !flat.isEmpty {
            apns = try JSONFields(.object(fields.members.filter { Self.apnsFields.contains($0.key) }), path: fields.path, credentials: fields.credentials)
            givesAPNSAtTopLevel = true
        } else {
            apns = nil
        }
        // An app without APNs credentials (it reaches browsers and/or Android devices) needs no
        // topic or environment; one with APNs credentials needs both.
        let hasCredentials = apns.map { $0.has("authKey") || $0.has("certificate") || $0.has("credentialsByEnvironment") } ?? false
        let browsersOnly = !hasCredentials && platformKeys.contains(where: fields.has)
        let settings: JSONFields
        if let apns {
            settings = apns
        } else if browsersOnly {
            settings = try JSONFields(.object([:]), path: fields.at("apns"), credentials: fields.credentials)
        } else {
            throw FieldError(
                fields.path,
                "give apns {topic, environment, authKey {file, keyID, teamID} and/or certificate {file, passwordEnv}} to reach APNs, \(Self.otherPlatformsHint)"
            )
        }
        let topic = browsersOnly ? try settings.string("topic") : try settings.requiredString("topic")
        if let topic {
            guard !topic.contains("/"), PeerText.isSafe(topic), topic.utf8.count <= 255 else {
                throw FieldError(settings.at("topic"), "must be the app's bundle ID, e.g. com.example.app")
            }
        }
        let environmentName = browsersOnly ? try settings.string("environment") ?? "production" : try settings.requiredString("environment")
        let apnsEnvironment: APNSEnvironment
        switch environmentName {
        case "sandbox": apnsEnvironment = .sandbox
        case "production": apnsEnvironment = .production
        default:
            do {
                apnsEnvironment = try APNSEnvironment(url: environmentName)
            } catch {
                throw FieldError(settings.at("environment"), "must be sandbox, production or https://HOST:PORT (\(error.message))")
            }
        }
        // The app's credentials: a provider key and/or a certificate (the key serves every kind
        // not named in credentialsByKind when both are given: token authentication covers every
        // push type, apns-spec §1.5), and a credential per token kind where one is needed (a
        // VoIP certificate).
        let authKey = try settings.object("authKey").map { object throws(FieldError) in try Self.providerKey(object, directory: directory) }
        let certificate = try settings.object("certificate").map { object throws(FieldError) in
            try Self.certificate(object, directory: directory, environment: environment)
        }
        // A credential per environment (keys scoped to one since February 2025), each entry as a
        // kind's: the app's own by name, or a key or certificate of its own.
        var byEnvironment: [TokenEnvironment: APNSCredentials] = [:]
        if let environments = try settings.object("credentialsByEnvironment") {
            try environments.only(TokenEnvironment.allCases.map(\.rawValue))
            for tokenEnvironment in TokenEnvironment.allCases where environments.has(tokenEnvironment.rawValue) {
                byEnvironment[tokenEnvironment] = try Self.credentialEntry(
                    environments, tokenEnvironment.rawValue, authKey: authKey, certificate: certificate, directory: directory, environment: environment)
            }
            guard !byEnvironment.isEmpty else { throw FieldError(settings.at("credentialsByEnvironment"), "names no environment: give sandbox and/or production") }
        }
        let ownCredentials = authKey ?? certificate
        // With credentials per environment only, the app's credential (what start-up checks,
        // logs and counts) is its default environment's, else the other's.
        let credentials = ownCredentials ?? byEnvironment[apnsEnvironment.kind == .sandbox ? .sandbox : .production] ?? byEnvironment.values.first
        if credentials == nil, !browsersOnly {
            throw FieldError(
                settings.path,
                "give authKey {file, keyID, teamID} and/or certificate {file, passwordEnv} to reach APNs, \(Self.otherPlatformsHint)"
            )
        }
        if credentials == nil, settings.has("credentialsByKind") {
            throw FieldError(settings.at("credentialsByKind"), "needs the app's own authKey or certificate as well")
        }
        var byKind: [TokenKind: APNSCredentials] = [:]
        if let kinds = try settings.object("credentialsByKind") {
            try kinds.only(TokenKind.allCases.map(\.rawValue))
            for kind in TokenKind.allCases where kinds.has(kind.rawValue) {
                byKind[kind] = try Self.credentialEntry(kinds, kind.rawValue, authKey: authKey, certificate: certificate, directory: directory, environment: environment)
            }
        }
        self.id = id
        self.topic = topic
        self.environment = apnsEnvironment
        self.credentials = credentials
        credentialsByKind = byKind
        credentialsByEnvironment = byEnvironment
        credentialsServeEveryEnvironment = ownCredentials != nil
        // Hosts per token environment (mocks and tests); caFile applies to each.
        if let hosts = try settings.object("environments") {
            try hosts.only(TokenEnvironment.allCases.map(\.rawValue))
            for tokenEnvironment in TokenEnvironment.allCases {
                guard let url = try hosts.string(tokenEnvironment.rawValue) else { continue }
                do {
                    environments[tokenEnvironment] = try APNSEnvironment(url: url)
                } catch {
                    throw FieldError(hosts.at(tokenEnvironment.rawValue), "must be https://HOST:PORT (\(error.message))")
                }
            }
        }
        if let certificates = try Self.caFile(settings, directory: directory) { trustRoots = .systemAnd(certificates) }
        if let connections = try settings.int("connections") {
            guard (1...64).contains(connections) else { throw FieldError(settings.at("connections"), "must be 1 to 64") }
            self.connections = connections
        }
        for platform in GatewayPlatforms.all {
            guard let key = platform.configurationKey, let object = try fields.object(key) else { continue }
            platformSettings[platform.platform] = try platform.settings(object, directory: directory, environment: environment)
        }
        if let zone = try fields.timeZone("defaultTimeZone") { defaultTimeZone = zone }
        if let categories = try fields.object("categories") {
            self.categories = try NotificationCategory.parse(categories, maximumWindowSeconds: 365 * 86400)
        }
        if let receipts = try fields.object("receipts") { self.receipts = try ReceiptSettings(receipts) }
        if let language = try fields.string("defaultLanguage") {
            guard DeviceRegistration.isLocale(language) else {
                throw FieldError(fields.at("defaultLanguage"), "must be a BCP 47 language tag (en, pt-BR): the language of devices that registered none")
            }
            defaultLanguage = language
        }
        if let quiet = try fields.object("quietHours") {
            try quiet.only(["start", "end"])
            guard let start = try quiet.timeOfDay("start") else { throw FieldError(quiet.at("start"), "is required (HH:MM)") }
            guard let end = try quiet.timeOfDay("end") else { throw FieldError(quiet.at("end"), "is required (HH:MM)") }
            guard start != end else { throw FieldError(quiet.at("end"), "must differ from start") }
            quietHours = QuietHours(start: start, end: end)
        }
        if let rate = try fields.number("maximumRatePerSecond") {
            guard rate > 0, rate <= 1_000_000 else { throw FieldError(fields.at("maximumRatePerSecond"), "must be more than 0 and at most 1,000,000") }
            maximumRatePerSecond = rate
        }
        webhooks = try Self.webhooks(fields, environment: environment)
        if let stale = try fields.object("staleDeviceDays") {
            try stale.only(DevicePlatform.allCases.map(\.rawValue))
            for platform in DevicePlatform.allCases {
                guard let days = try stale.int(platform.rawValue) else { continue }
                guard (0...36500).contains(days) else { throw FieldError(stale.at(platform.rawValue), "must be 0 (never) to 36500 days") }
                staleDeviceDays[platform] = days
            }
        }
        revision = AppRevision.of(fields.members, directory: directory)
    }

    /// `fcm`: `{"serviceAccountFile", "endpoint"?, "caFile"?, "connections"?}`; inline (the admin
    /// API), `serviceAccount` holds the key file's JSON object instead of `serviceAccountFile`.
    static func fcm(_ fields: JSONFields, directory: String) throws(FieldError) -> GatewayConfiguration.FCMSettings {
        try fields.only(["serviceAccountFile", "serviceAccount", "endpoint", "caFile", "caPem", "connections"])
        try fields.checkCredentialForm(files: ["serviceAccountFile"], inline: ["serviceAccount"])
        let account: FCMServiceAccount
        let secret = fields.credentials == .inline ? "serviceAccount" : "serviceAccountFile"
        do {
            switch fields.credentials {
            case .files: account = try FCMServiceAccount(contentsOfFile: resolve(try fields.requiredString(secret), in: directory))
            case .inline: account = try FCMServiceAccount(json: try fields.inlineObject(secret))
            }
        } catch let error as FieldError {
            throw error
        } catch let error as FCMError {
            // The message names the field of the file, never its key.
            throw FieldError(fields.at(secret), "\(error.message) (the key file of a service account, from the Firebase console or gcloud)")
        } catch {
            throw FieldError(fields.at(secret), "cannot be read as a service account's key file")
        }
        var settings = GatewayConfiguration.FCMSettings(serviceAccount: account)
        if let endpoint = try fields.string("endpoint") {
            guard JSONFields.isHTTPSURL(endpoint) else {
                throw FieldError(fields.at("endpoint"), "must be an https:// URL (FCM's, or a mock's: herald mock --fcm-port)")
            }
            settings.endpoint = endpoint
        }
        settings.trustRoots = try caFile(fields, directory: directory) ?? []
        if let connections = try fields.int("connections") {
            guard (1...64).contains(connections) else { throw FieldError(fields.at("connections"), "must be 1 to 64") }
            settings.connections = connections
        }
        return settings
    }

    /// `webPush`: `{"vapidKeyFile", "subject", "defaultURL", "caFile"?, "allowedHosts"?,
    /// "allowPrivateAddresses"?, "allowLoopbackHTTP"?}`.
    /// Inline (the admin API), `vapidKeyPem` holds the key's PEM text instead of `vapidKeyFile`.
    static func webPush(_ fields: JSONFields, directory: String) throws(FieldError) -> GatewayConfiguration.WebPushSettings {
        try fields.only([
            "vapidKeyFile", "vapidKeyPem", "subject", "defaultURL", "caFile", "caPem", "allowedHosts", "allowPrivateAddresses", "allowLoopbackHTTP",
        ])
        try fields.checkCredentialForm(files: ["vapidKeyFile"], inline: ["vapidKeyPem"])
        let secret = fields.credentials == .inline ? "vapidKeyPem" : "vapidKeyFile"
        let given = try fields.requiredString(secret)
        let key: VAPIDKey
        do {
            switch fields.credentials {
            case .files: key = try VAPIDKey(contentsOfFile: resolve(given, in: directory))
            case .inline: key = try VAPIDKey(pem: given)
            }
        } catch {
            throw FieldError(fields.at(secret), "\(error.message) (make one with: herald webpush keygen --out FILE)")
        }
        let subject = try fields.requiredString("subject")
        do {
            try VAPID.checkSubject(subject)
        } catch {
            throw FieldError(fields.at("subject"), error.message)
        }
        let defaultURL = try fields.requiredString("defaultURL")
        guard JSONFields.isHTTPSURL(defaultURL) else {
            throw FieldError(fields.at("defaultURL"), "must be an https:// URL (where a browser's notification opens)")
        }
        var settings = GatewayConfiguration.WebPushSettings(key: key, subject: subject, defaultURL: defaultURL)
        settings.trustRoots = try caFile(fields, directory: directory) ?? []
        settings.allowsLoopbackHTTP = try fields.bool("allowLoopbackHTTP") ?? false
        settings.allowsPrivateAddresses = try fields.bool("allowPrivateAddresses") ?? false
        settings.allowedHosts = try fields.strings("allowedHosts") ?? []
        for host in settings.allowedHosts {
            let name = host.hasPrefix("*.") ? String(host.dropFirst(2)) : host.hasPrefix(".") ? String(host.dropFirst()) : host
            guard !name.isEmpty, name.utf8.count <= 253, !name.contains(where: { "/:@?# ".contains($0) }) || IPAddress(name) != nil else {
                throw FieldError(fields.at("allowedHosts"), "\(PeerText(host, limit: 80)) is not a host name (give names like push.example.net or .example.net, without a scheme or path)")
            }
        }
        return settings
    }

    /// `caFile`: the PEM certificates of a CA to trust besides the system's (a mock's), if given;
    /// or `caPem`, the certificates' PEM text (no secret: the file may give it too; the admin API
    /// takes only this).
    static func caFile(_ fields: JSONFields, directory: String) throws(FieldError) -> [NIOSSLCertificate]? {
        try fields.checkCredentialForm(files: ["caFile"], inline: [], inlineHint: "caPem, the CA's PEM text,")
        if let pem = try fields.string("caPem") {
            guard !fields.has("caFile") else { throw FieldError(fields.at("caPem"), "give caFile or caPem, not both") }
            let certificates = (try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))) ?? []
            guard !certificates.isEmpty else { throw FieldError(fields.at("caPem"), "holds no PEM certificate (-----BEGIN CERTIFICATE-----)") }
            return certificates
        }
        guard let caFile = try fields.string("caFile") else { return nil }
        let path = resolve(caFile, in: directory)
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw FieldError(fields.at("caFile"), "cannot read PEM certificates from '\(path)' (\(error))")
        }
        guard !certificates.isEmpty else { throw FieldError(fields.at("caFile"), "'\(path)' holds no PEM certificate") }
        return certificates
    }

    static func isValidID(_ id: String) -> Bool {
        let bytes = id.utf8
        return !bytes.isEmpty && bytes.count <= 64 && bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
    }

    /// `{file, keyID, teamID}`: a `.p8` provider key; inline (the admin API), `pem` holds the
    /// key's text instead of `file`.
    static func providerKey(_ authKey: JSONFields, directory: String) throws(FieldError) -> APNSCredentials {
        try authKey.only(["file", "pem", "keyID", "teamID"])
        try authKey.checkCredentialForm(files: ["file"], inline: ["pem"])
        let secret = authKey.credentials == .inline ? "pem" : "file"
        let given = try authKey.requiredString(secret)
        let keyID = try authKey.requiredString("keyID")
        let teamID = try authKey.requiredString("teamID")
        do {
            switch authKey.credentials {
            case .files: return .providerToken(try ProviderKey(contentsOfFile: resolve(given, in: directory), keyID: keyID, teamID: teamID))
            case .inline: return .providerToken(try ProviderKey(pem: given, keyID: keyID, teamID: teamID))
            }
        } catch {
            let field = error.code == .invalidKeyID ? "keyID" : error.code == .invalidTeamID ? "teamID" : secret
            throw FieldError(authKey.at(field), error.message)
        }
    }

    /// `{file, keyFile?, passwordEnv?}`: a `.p12` or PEM push certificate; inline (the admin API),
    /// `{p12Base64, password?}` or `{pem, keyPem?}` (``inlineCertificate(_:)``).
    static func certificate(_ certificate: JSONFields, directory: String, environment: [String: String]) throws(FieldError) -> APNSCredentials {
        try certificate.only(["file", "keyFile", "passwordEnv", "p12Base64", "password", "pem", "keyPem"])
        try certificate.checkCredentialForm(
            files: ["file", "keyFile", "passwordEnv"], inline: ["p12Base64", "password", "pem", "keyPem"], filesHint: "file (with passwordEnv or keyFile)",
            inlineHint: "p12Base64 (with password) or pem (with keyPem)")
        if certificate.credentials == .inline { return try inlineCertificate(certificate) }
        let file = try certificate.requiredString("file")
        var password: String?
        if let name = try certificate.string("passwordEnv") {
            guard let value = environment[name] else {
                throw FieldError(certificate.at("passwordEnv"), "the environment variable \(name) is not set")
            }
            password = value
        }
        do {
            return .certificate(
                try CertificateIdentity(
                    file: resolve(file, in: directory), keyFile: try certificate.string("keyFile").map { resolve($0, in: directory) }, password: password
                )
            )
        } catch let error as FieldError {
            throw error
        } catch let error as IdentityError {
            throw FieldError(certificate.at("file"), error.message)
        } catch {
            throw FieldError(certificate.at("file"), "\(error)")
        }
    }

    static func resolve(_ file: String, in directory: String) -> String {
        file.hasPrefix("/") ? file : directory + file
    }
}

extension APIKey {
    /// An `apiKeys` entry: `{"name", "sha256", "apps"}`, or `{"name", "sha256", "admin": true}`.
    /// An app key may name an app the file (`known`) does not define: one the admin API defines,
    /// now or later. A name that could be no app's ID is refused.
    init(_ fields: JSONFields, apps known: Set<String>) throws(FieldError) {
        try fields.only(["name", "sha256", "apps", "admin"])
        let name = try fields.requiredString("name")
        guard name.utf8.count <= 64, PeerText.isSafe(name) else { throw FieldError(fields.at("name"), "must be 1 to 64 printable characters") }
        let hex = try fields.requiredString("sha256")
        guard let digest = Self.bytes(hex: hex), digest.count == 32 else {
            throw FieldError(fields.at("sha256"), "must be the 64 hex digits of the key's SHA-256 (herald api-key prints it)")
        }
        if try fields.bool("admin") == true {
            guard !fields.has("apps") else {
                throw FieldError(fields.at("apps"), "an admin key uses the admin routes, no app's: give the apps a key of their own")
            }
            self = .admin(name: name, sha256: digest)
            return
        }
        guard let apps = try fields.strings("apps"), !apps.isEmpty else {
            throw FieldError(fields.at("apps"), "list the apps this key may use (or \"admin\": true for the admin routes)")
        }
        for (index, app) in apps.enumerated() where !known.contains(app) && !GatewayConfiguration.App.isValidID(app) {
            throw FieldError("\(fields.at("apps"))[\(index)]", "'\(PeerText(app, limit: 64))' is not an app ID (1 to 64 of a-z 0-9 . _ -)")
        }
        self.init(name: name, sha256: digest, apps: Set(apps))
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: digit - 0x30
            case 0x61...0x66: digit - 0x61 + 10
            case 0x41...0x46: digit - 0x41 + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}

extension QueueSettings {
    init(_ fields: JSONFields) throws(FieldError) {
        self.init()
        try fields.only(["leaseSeconds", "maximumAgeSeconds", "retryInitialSeconds", "retryMaximumSeconds", "retentionSeconds"])
        func seconds(_ name: String, _ range: ClosedRange<Int>) throws(FieldError) -> Duration? {
            guard let value = try fields.int(name) else { return nil }
            guard range.contains(value) else { throw FieldError(fields.at(name), "must be \(range.lowerBound) to \(range.upperBound) seconds") }
            return .seconds(value)
        }
        if let value = try seconds("leaseSeconds", 2...3600) { lease = value }
        if let value = try seconds("maximumAgeSeconds", 1...(30 * 86400)) { maximumAge = value }
        if let value = try seconds("retryInitialSeconds", 1...3600) { initialRetryDelay = value }
        if let value = try seconds("retryMaximumSeconds", 1...86400) { maximumRetryDelay = value }
        if let value = try seconds("retentionSeconds", 60...(365 * 86400)) { retention = value }
    }
}

extension WorkerSettings {
    init(_ fields: JSONFields) throws(FieldError) {
        self.init()
        try fields.only(["count", "batchSize", "shutdownGraceSeconds", "idleClientSeconds"])
        if let count = try fields.int("count") {
            guard (1...64).contains(count) else { throw FieldError(fields.at("count"), "must be 1 to 64") }
            self.count = count
        }
        if let batchSize = try fields.int("batchSize") {
            guard (1...10_000).contains(batchSize) else { throw FieldError(fields.at("batchSize"), "must be 1 to 10000") }
            self.batchSize = batchSize
        }
        if let seconds = try fields.int("shutdownGraceSeconds") {
            guard (1...300).contains(seconds) else { throw FieldError(fields.at("shutdownGraceSeconds"), "must be 1 to 300") }
            shutdownGrace = .seconds(seconds)
        }
        if let seconds = try fields.int("idleClientSeconds") {
            guard (1...86400).contains(seconds) else { throw FieldError(fields.at("idleClientSeconds"), "must be 1 to 86400") }
            idleClientTimeout = .seconds(seconds)
        }
    }
}

extension APILimits {
    init(_ fields: JSONFields) throws(FieldError) {
        self.init()
        try fields.only([
            "maximumBodySize", "maximumImportLineSize", "maximumAudienceSize", "maximumConnections", "maximumConnectionsPerAddress",
            "requestHeadTimeoutSeconds", "minimumBodyRate", "maximumImportSize", "requestsPerSecondPerKey", "requestBurstPerKey",
            "maximumPendingPerApp", "maximumScheduleAheadSeconds", "receiptsPerSecondPerAddress", "receiptBurstPerAddress",
        ])
        func bounded(_ name: String, _ range: ClosedRange<Int>) throws(FieldError) -> Int? {
            guard let value = try fields.int(name) else { return nil }
            guard range.contains(value) else { throw FieldError(fields.at(name), "must be \(range.lowerBound) to \(range.upperBound)") }
            return value
        }
        if let value = try bounded("maximumBodySize", 4096...(64 << 20)) { maximumBodySize = value }
        if let value = try bounded("maximumImportLineSize", 1024...(1 << 20)) { maximumImportLineSize = value }
        if let value = try bounded("maximumAudienceSize", 1...1_000_000) { maximumAudienceSize = value }
        if let value = try bounded("maximumConnections", 1...100_000) { maximumConnections = value }
        if let value = try bounded("maximumConnectionsPerAddress", 1...100_000) { maximumConnectionsPerAddress = value }
        if let value = try bounded("requestHeadTimeoutSeconds", 1...30) { requestHeadTimeout = .seconds(value) }
        if let value = try bounded("minimumBodyRate", 1...(1 << 30)) { minimumBodyRate = value }
        if let value = try bounded("maximumImportSize", 4096...(1 << 40)) { maximumImportSize = value }
        if let value = try bounded("requestsPerSecondPerKey", 1...1_000_000) { requestsPerSecondPerKey = value }
        if let value = try bounded("requestBurstPerKey", 1...10_000_000) { requestBurstPerKey = value }
        if let value = try bounded("maximumPendingPerApp", 1...1_000_000_000_000) { maximumPendingPerApp = value }
        if let value = try bounded("maximumScheduleAheadSeconds", 60...(366 * 24 * 3600)) { maximumScheduleAhead = .seconds(value) }
        if let value = try bounded("receiptsPerSecondPerAddress", 1...10_000_000) { receiptsPerSecondPerAddress = value }
        if let value = try bounded("receiptBurstPerAddress", 100...100_000_000) { receiptBurstPerAddress = value }
    }
}

extension HousekeepingSettings {
    init(_ fields: JSONFields) throws(FieldError) {
        self.init()
        try fields.only(["statisticsIntervalSeconds", "purgeIntervalSeconds", "purgeBatchSize"])
        func bounded(_ name: String, _ range: ClosedRange<Int>) throws(FieldError) -> Int? {
            guard let value = try fields.int(name) else { return nil }
            guard range.contains(value) else { throw FieldError(fields.at(name), "must be \(range.lowerBound) to \(range.upperBound)") }
            return value
        }
        if let value = try bounded("statisticsIntervalSeconds", 1...3600) { statisticsInterval = .seconds(value) }
        if let value = try bounded("purgeIntervalSeconds", 1...3600) { purgeInterval = .seconds(value) }
        if let value = try bounded("purgeBatchSize", 1...100_000) { purgeBatchSize = value }
    }
}
