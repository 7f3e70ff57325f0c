#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An app defined through the gateway's admin API, as the store keeps it: its definition sealed
/// by the gateway (the store never holds it in clear), which key sealed it, and when it was made
/// and last replaced.
public struct AppDefinition: Sendable, Hashable {
    /// The app's ID, as in the API's paths.
    public var id: String
    /// The definition, sealed: only the gateway, with the key ``sealedWith`` names, opens it.
    public var sealed: [UInt8]
    /// Which key sealed it: the key's fingerprint, never the key.
    public var sealedWith: String
    public var createdAt: Date
    public var updatedAt: Date
    /// When its deletion began, while its rows are being deleted; `nil` otherwise. An app being
    /// deleted is served by no process.
    public var deletingSince: Date?

    public init(id: String, sealed: [UInt8], sealedWith: String, createdAt: Date, updatedAt: Date, deletingSince: Date? = nil) {
        self.id = id
        self.sealed = sealed
        self.sealedWith = sealedWith
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletingSince = deletingSince
    }

    /// What a process compares to see whether its copy of the definition is still the stored one.
    public var summary: AppDefinitionSummary {
        AppDefinitionSummary(id: id, sealedWith: sealedWith, createdAt: createdAt, updatedAt: updatedAt, deletingSince: deletingSince)
    }
}

/// An app definition without its sealed bytes: what ``HeraldStore/appCatalog()`` lists, so that a
/// process reads again only the definitions that changed.
public struct AppDefinitionSummary: Sendable, Hashable {
    public var id: String
    public var sealedWith: String
    public var createdAt: Date
    public var updatedAt: Date
    public var deletingSince: Date?

    public init(id: String, sealedWith: String, createdAt: Date, updatedAt: Date, deletingSince: Date? = nil) {
        self.id = id
        self.sealedWith = sealedWith
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletingSince = deletingSince
    }
}

/// An API key made through the admin API for one app: only its SHA-256 is kept (the key is shown
/// once, when it is made).
public struct StoredAppKey: Sendable, Hashable {
    /// The app it may use.
    public var app: String
    /// Who holds it: unique among the app's keys; for logs, never the key.
    public var name: String
    /// SHA-256 of the key's UTF-8 bytes.
    public var sha256: [UInt8]
    public var createdAt: Date

    public init(app: String, name: String, sha256: [UInt8], createdAt: Date) {
        self.app = app
        self.name = name
        self.sha256 = sha256
        self.createdAt = createdAt
    }
}

/// Everything defined through the admin API, read at once: the counter every change raises, the
/// definitions (without their sealed bytes) and the keys.
public struct AppCatalog: Sendable, Hashable {
    /// Raised by every change of a definition or a key (``HeraldStore/appCatalogVersion()``).
    public var version: Int64
    public var definitions: [AppDefinitionSummary]
    public var keys: [StoredAppKey]

    public init(version: Int64, definitions: [AppDefinitionSummary], keys: [StoredAppKey]) {
        self.version = version
        self.definitions = definitions
        self.keys = keys
    }
}

/// What deleting an app removed.
public struct AppDeletion: Sendable, Hashable {
    /// Its notifications that were still queued or sending, cancelled first: what a worker had in
    /// flight then may still reach its device; nothing else of them is sent.
    public var cancelledNotifications = 0
    /// Its notifications deleted, with their deliveries, counts and ranges.
    public var notifications = 0
    /// Its devices deleted, with their tags.
    public var devices = 0
    /// Whether it had a definition stored through the API (it may have had rows only).
    public var hadDefinition = false

    public init() {}
}
