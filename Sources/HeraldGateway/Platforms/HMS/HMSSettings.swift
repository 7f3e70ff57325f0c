import HeraldCore
import HeraldHMS
import HeraldStore
import NIOSSL

extension GatewayConfiguration {
    /// An app's Huawei Push Kit: the credentials of each API it sends with, and where Push Kit is.
    /// Android devices (HMS Core) need ``app``; HarmonyOS NEXT devices need ``serviceAccount``.
    public struct HMSSettings: Sendable {
        /// The app's OAuth 2.0 client ID and secret (`clientID`, the secret from the environment
        /// variable `clientSecretEnv`, and `tokenEndpoint`): what the Android API (v1) takes.
        public var app: HMSAppCredentials?
        /// The service account (`serviceAccountFile`): what HarmonyOS NEXT's API (v3) takes.
        public var serviceAccount: HMSServiceAccount?
        /// Push Kit's origin: Huawei's, or a mock's (`endpoint`).
        public var endpoint: String = HMSClient.huaweiEndpoint
        /// CAs trusted besides the system's, for the endpoint and the token endpoint alike (`caFile`: a mock's).
        public var trustRoots: [NIOSSLCertificate] = []
        /// HTTP/2 connections to Push Kit. Default 2.
        public var connections = 2

        /// Sending with either or both credentials.
        public init(app: HMSAppCredentials? = nil, serviceAccount: HMSServiceAccount? = nil) {
            self.app = app
            self.serviceAccount = serviceAccount
        }

        /// Whether these settings can send to devices of `api`.
        func reaches(_ api: HMSAddress.API) -> Bool {
            switch api {
            case .android: app != nil
            case .harmony: serviceAccount != nil
            }
        }
    }
}

extension GatewayConfiguration.App {
    /// How the app reaches Huawei devices (Push Kit); `nil`: it has none (`hms` in the file).
    public var hms: GatewayConfiguration.HMSSettings? {
        get { platformSettings[.hms] as? GatewayConfiguration.HMSSettings }
        set { platformSettings[.hms] = newValue }
    }

    /// `hms`: `{"clientID"?, "clientSecretEnv"?, "serviceAccountFile"?, "projectID"?, "endpoint"?,
    /// "tokenEndpoint"?, "caFile"?, "connections"?}`, with `clientID` and `clientSecretEnv`
    /// (Android) and/or `serviceAccountFile` (HarmonyOS NEXT). The secret is read from
    /// `environment`, never from the file. Inline (the admin API), `clientSecret` holds the secret
    /// and `serviceAccount` the key file's JSON object instead.
    static func hms(_ fields: JSONFields, directory: String, environment: [String: String]) throws(FieldError) -> GatewayConfiguration.HMSSettings {
        try fields.only([
            "clientID", "clientSecretEnv", "clientSecret", "serviceAccountFile", "serviceAccount", "projectID", "endpoint", "tokenEndpoint", "caFile",
            "caPem", "connections",
        ])
        try fields.checkCredentialForm(files: ["clientSecretEnv"], inline: ["clientSecret"])
        try fields.checkCredentialForm(files: ["serviceAccountFile"], inline: ["serviceAccount"])
        let secretField = fields.credentials == .inline ? "clientSecret" : "clientSecretEnv"
        let accountField = fields.credentials == .inline ? "serviceAccount" : "serviceAccountFile"
        var settings = GatewayConfiguration.HMSSettings()
        if let clientID = try fields.string("clientID") {
            let secret: String
            switch fields.credentials {
            case .files:
                guard let name = try fields.string("clientSecretEnv") else {
                    throw FieldError(fields.at("clientSecretEnv"), "is required with clientID: the environment variable holding the app's OAuth 2.0 client secret")
                }
                guard let value = environment[name] else { throw FieldError(fields.at("clientSecretEnv"), "the environment variable \(name) is not set") }
                secret = value
            case .inline:
                guard let value = try fields.string("clientSecret") else {
                    throw FieldError(fields.at("clientSecret"), "is required with clientID: the app's OAuth 2.0 client secret")
                }
                secret = value
            }
            let tokenEndpoint = try fields.string("tokenEndpoint") ?? HMSAppCredentials.huaweiTokenURI
            guard JSONFields.isHTTPSURL(tokenEndpoint) else {
                throw FieldError(fields.at("tokenEndpoint"), "must be an https:// URL (Huawei's OAuth 2.0 token endpoint, or a mock's)")
            }
            do {
                settings.app = try HMSAppCredentials(clientID: clientID, clientSecret: secret, tokenURI: tokenEndpoint)
            } catch {
                // The message names the field, never the secret.
                let field = error.field == "clientSecret" ? secretField : error.field == "tokenURI" ? "tokenEndpoint" : "clientID"
                throw FieldError(fields.at(field), error.message)
            }
        } else {
            for name in [secretField, "tokenEndpoint"] where fields.has(name) {
                throw FieldError(fields.at(name), "needs clientID (the app's OAuth 2.0 client ID, for Android devices)")
            }
        }
        if fields.has(accountField) {
            do {
                switch fields.credentials {
                case .files: settings.serviceAccount = try HMSServiceAccount(contentsOfFile: resolve(try fields.requiredString(accountField), in: directory))
                case .inline: settings.serviceAccount = try HMSServiceAccount(json: try fields.inlineObject(accountField))
                }
            } catch let error as FieldError {
                throw error
            } catch let error as HMSError {
                // The message names the field of the file, never its key.
                throw FieldError(fields.at(accountField), "\(error.message) (the key file of a service account, from Huawei's API Console)")
            } catch {
                throw FieldError(fields.at(accountField), "cannot be read as a service account's key file")
            }
        }
        if let projectID = try fields.string("projectID") {
            guard let account = settings.serviceAccount else { throw FieldError(fields.at("projectID"), "needs \(accountField) (the project is the service account's)") }
            guard account.projectID == projectID else {
                throw FieldError(fields.at("projectID"), "is \(projectID) but the service account's project_id is \(account.projectID): the key file of another project")
            }
        }
        guard settings.app != nil || settings.serviceAccount != nil else {
            throw FieldError(fields.path, "give clientID and \(secretField) (Android devices) and/or \(accountField) (HarmonyOS NEXT devices)")
        }
        if let endpoint = try fields.string("endpoint") {
            guard JSONFields.isHTTPSURL(endpoint) else { throw FieldError(fields.at("endpoint"), "must be an https:// URL (Push Kit's, or a mock's)") }
            settings.endpoint = endpoint
        }
        settings.trustRoots = try caFile(fields, directory: directory) ?? []
        if let connections = try fields.int("connections") {
            guard (1...64).contains(connections) else { throw FieldError(fields.at("connections"), "must be 1 to 64") }
            settings.connections = connections
        }
        return settings
    }
}
