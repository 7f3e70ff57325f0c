import Foundation

extension HeraldDevice {
    /// Where to register, and what to say about the device.
    ///
    /// There is no default ``environment``: a development build registered as production (or the
    /// reverse) gets no notifications, so the app says which it is, for example
    /// `#if DEBUG .sandbox #else .production #endif`.
    public struct Configuration: Sendable {
        /// The app backend's registration URL; tokens go to `PUT {backend}/{hex token}`.
        public var backend: URL
        /// The APNs environment of the app's build.
        public var environment: Environment
        /// Where the record of what was sent is kept (`herald-registrations.json`).
        public var directory: URL
        /// Header fields for each request, asked for each time: the app's own authorization.
        public var headers: @Sendable () async throws -> [String: String]
        /// The user's language, BCP 47 (`pt-BR`). Default: the device's current locale.
        public var locale: String
        /// The user's time zone, IANA (`Europe/Lisbon`). Default: the device's current one.
        public var timeZone: String
        /// How long a registration stands before it is sent again unchanged. Default 1 day.
        public var resendInterval: Duration

        /// A configuration whose requests carry the fixed header fields `headers`.
        public init(backend: URL, environment: Environment, directory: URL, headers: [String: String] = [:]) {
            self.init(backend: backend, environment: environment, directory: directory, headers: { headers })
        }

        /// A configuration that asks `headers` for each request's header fields (a fresh token
        /// of the app's own sign-in, say).
        public init(backend: URL, environment: Environment, directory: URL, headers: @escaping @Sendable () async throws -> [String: String]) {
            self.backend = backend
            self.environment = environment
            self.directory = directory
            self.headers = headers
            self.locale = HeraldDevice.bcp47(Locale.current.identifier)
            self.timeZone = TimeZone.current.identifier
            self.resendInterval = .seconds(86_400)
        }
    }

    /// A Foundation locale identifier (`pt_BR`, `sr_Latn_RS@calendar=gregorian`) as a BCP 47
    /// tag (`pt-BR`, `sr-Latn-RS`).
    static func bcp47(_ identifier: String) -> String {
        let language = identifier.split(separator: "@", maxSplits: 1).first.map(String.init) ?? identifier
        let tag = language.replacingOccurrences(of: "_", with: "-")
        return tag.isEmpty ? "und" : tag
    }
}
