import HeraldCore
import HeraldStore

extension GatewayConfiguration {
    /// An app's Matrix push gateway (`matrix` in its entry): which Matrix `app_id`s a homeserver's
    /// pushers name are this app's devices, and on which platform (docs/matrix.md).
    public struct MatrixSettings: Sendable, Hashable {
        /// The platform of each Matrix app ID's pushkeys: `{"com.example.chat.ios": .apns}`.
        public var appIDs: [String: DevicePlatform]

        public init(appIDs: [String: DevicePlatform]) {
            self.appIDs = appIDs
        }

        /// The platforms a Matrix pusher may be of (the forms Sygnal's pushkins take).
        public static let platforms: [DevicePlatform] = [.apns, .fcm, .webpush]

        /// The longest Matrix app ID (the client-server API's `app_id`: at most 64 characters).
        public static let maximumAppIDLength = 64
    }

    /// Reads each app entry's `matrix` (`{"appIds": {"com.example.chat.ios": "apns", …}}`) into
    /// its app: each platform named must be one the app reaches, and a Matrix app ID names one
    /// app of the file.
    static func readMatrix(into apps: inout [App], from entries: [JSONFields]) throws(FieldError) {
        var seen: [String: String] = [:]
        for (index, entry) in entries.enumerated() where index < apps.count {
            guard let fields = try entry.object("matrix") else { continue }
            let settings = try App.matrix(fields, reaches: apps[index].platforms)
            for appID in settings.appIDs.keys.sorted() {
                if let other = seen[appID] {
                    throw FieldError(fields.at("appIds.\(appID)"), "is app \(other)'s already: a Matrix app ID leads to one app")
                }
                seen[appID] = apps[index].id
            }
            apps[index].matrix = settings
        }
    }
}

extension GatewayConfiguration.App {
    /// `matrix`: `{"appIds": {MATRIX_APP_ID: "apns" | "fcm" | "webpush"}}`, for an app that
    /// reaches each platform it names.
    static func matrix(_ fields: JSONFields, reaches platforms: Set<DevicePlatform>) throws(FieldError) -> GatewayConfiguration.MatrixSettings {
        try fields.only(["appIds"])
        guard let appIDs = try fields.object("appIds"), !appIDs.members.isEmpty else {
            throw FieldError(fields.at("appIds"), "is required: {\"com.example.chat.ios\": \"apns\", …}, the Matrix app_id of each pusher and its platform")
        }
        var settings = GatewayConfiguration.MatrixSettings(appIDs: [:])
        let names = GatewayConfiguration.MatrixSettings.platforms.map(\.rawValue).joined(separator: ", ")
        for appID in appIDs.members.keys.sorted() {
            let path = appIDs.at(appID)
            guard !appID.isEmpty, appID.utf8.count <= GatewayConfiguration.MatrixSettings.maximumAppIDLength, PeerText.isSafe(appID) else {
                throw FieldError(path, "a Matrix app_id is 1 to \(GatewayConfiguration.MatrixSettings.maximumAppIDLength) printable characters")
            }
            guard let name = try appIDs.string(appID), let platform = DevicePlatform(rawValue: name), GatewayConfiguration.MatrixSettings.platforms.contains(platform) else {
                throw FieldError(path, "must be one of \(names)")
            }
            guard platforms.contains(platform) else {
                throw FieldError(path, "names \(platform), which this app does not reach: give the app its \(GatewayPlatforms.conformance(of: platform).configurationKey ?? "apns") settings too")
            }
            settings.appIDs[appID] = platform
        }
        return settings
    }
}
