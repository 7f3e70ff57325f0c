import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Templates, preferences, frequency caps and digests (docs/gateway.md, "Templates,
/// preferences, caps and digests").
extension HeraldStore {
    /// Stores template `name` of `app` (the gateway's JSON, checked by the caller): version 1,
    /// or one more than the one it replaces. Notifications already queued keep the version they
    /// were queued with.
    @discardableResult
    public func putTemplate(app: String, name: String, body: [UInt8], now: Date = Date()) async throws -> StoredTemplate {
        guard StoredTemplate.isValidName(name) else {
            throw StoreError(.invalidInput, "template name: must be 1 to \(StoredTemplate.maximumNameLength) of A-Z a-z 0-9 _ - .")
        }
        return try await backend.putTemplate(app: app, name: name, body: body, now: now)
    }

    public func template(app: String, name: String) async throws -> StoredTemplate? {
        guard StoredTemplate.isValidName(name) else { return nil }
        return try await backend.template(app: app, name: name)
    }

    /// An app's templates by name, a page at a time.
    public func templates(app: String, limit: Int = 100, after: String? = nil) async throws -> Page<StoredTemplate> {
        try await backend.templates(app: app, limit: max(1, min(limit, 1000)), after: after)
    }

    /// Forgets a template; `false` when there was none such.
    public func deleteTemplate(app: String, name: String) async throws -> Bool {
        guard StoredTemplate.isValidName(name) else { return false }
        return try await backend.deleteTemplate(app: app, name: name)
    }

    /// Replaces a user's choices per category (checked by the caller against the app's categories).
    public func setPreferences(_ preferences: UserPreferences, app: String, now: Date = Date()) async throws {
        guard DeviceRegistration.isValidUser(preferences.user) else {
            throw StoreError(.invalidInput, "user: must be 1 to \(DeviceRegistration.maximumUserLength) bytes without control characters")
        }
        guard preferences.categories.count <= DeviceRegistration.maximumPreferences else {
            throw StoreError(.invalidInput, "categories: at most \(DeviceRegistration.maximumPreferences)")
        }
        for name in preferences.categories.keys where !DeviceRegistration.isCategoryName(name) {
            throw StoreError(.invalidInput, "categories: \(String(reflecting: PeerText(name, limit: 80).description)) is not a category name (1 to 64 of a-z 0-9 _ -)")
        }
        try await backend.setPreferences(preferences, app: app, now: now)
    }

    /// A user's choices per category (none stored: an empty set).
    public func preferences(app: String, user: String) async throws -> UserPreferences {
        try await backend.preferences(app: app, user: user)
    }

    /// Screens a claimed batch before it is sent: each device's user and language; the devices
    /// that opted out of the notification's category or are over one of its frequency caps
    /// (`rules`; `nil`: none apply), which the caller completes as skipped; and, for a digest,
    /// what each user's digest held as it closed. Caps hold across processes: each user's
    /// count is locked while it is checked and raised.
    public func screen(_ batch: WorkBatch, rules: ScreeningRules?, now: Date = Date()) async throws -> Screening {
        try await backend.screen(batch, rules: rules, now: now)
    }
}
