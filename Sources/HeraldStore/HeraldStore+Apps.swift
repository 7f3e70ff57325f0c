#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Apps defined through the gateway's admin API, kept for every process that shares the store:
/// each definition sealed by the gateway (the store holds bytes it cannot read), the API keys
/// made for them as their SHA-256, and a counter that each change raises, so that a process sees
/// a change with one cheap read (``appCatalogVersion()``) and reads again only what changed.
extension HeraldStore {
    /// Raised by every change of a definition or a key: a process that read the catalog at an
    /// earlier value reads it again.
    public func appCatalogVersion() async throws -> Int64 {
        try await backend.appCatalogVersion()
    }

    /// Every definition (without its sealed bytes, in ID order) and key, with the version they
    /// were read at, in one read.
    public func appCatalog() async throws -> AppCatalog {
        try await backend.appCatalog()
    }

    /// The definitions of `ids` that exist, sealed bytes included, in ID order.
    public func appDefinitions(ids: [String]) async throws -> [AppDefinition] {
        var definitions: [AppDefinition] = []
        for chunk in QueueEngine.chunks(ids, of: 500) { definitions += try await backend.appDefinitions(ids: Array(chunk)) }
        return definitions
    }

    /// The definition of `id`, if it has one.
    public func appDefinition(id: String) async throws -> AppDefinition? {
        try await backend.appDefinitions(ids: [id]).first
    }

    /// Defines app `id` as `sealed` (sealed with the key whose fingerprint is `sealedWith`), or
    /// replaces its definition. Returns what is stored and whether the app is new.
    ///
    /// - Throws: ``StoreError`` `conflict` while the app is being deleted.
    @discardableResult
    public func putAppDefinition(id: String, sealed: [UInt8], sealedWith: String, now: Date = Date()) async throws -> (
        definition: AppDefinitionSummary, created: Bool
    ) {
        guard !id.isEmpty, id.utf8.count <= 64 else { throw StoreError(.invalidInput, "an app ID is 1 to 64 bytes") }
        guard !sealed.isEmpty, !sealedWith.isEmpty else { throw StoreError(.invalidInput, "a definition is stored sealed, with its key's fingerprint") }
        let (definition, created) = try await backend.putAppDefinition(id: id, sealed: sealed, sealedWith: sealedWith, now: now)
        return (definition, created)
    }

    /// Stores `definition` sealed again (`sealed`, with the key whose fingerprint is `sealedWith`)
    /// if it is still as read: a definition replaced or deleted meanwhile is left alone. Returns
    /// whether it was. The catalog's version does not change: the definition says the same.
    @discardableResult
    public func resealAppDefinition(_ definition: AppDefinitionSummary, sealed: [UInt8], sealedWith: String) async throws -> Bool {
        try await backend.resealAppDefinition(definition, sealed: sealed, sealedWith: sealedWith)
    }

    /// Keeps a key made for an app.
    ///
    /// - Throws: ``StoreError`` `conflict` when the app has a key of that name already.
    public func addAppKey(_ key: StoredAppKey) async throws {
        guard key.sha256.count == 32 else { throw StoreError(.invalidInput, "a key is kept as its SHA-256: 32 bytes") }
        try await backend.addAppKey(key)
    }

    /// Forgets the key of `app` named `name`; `false` when it has none such.
    @discardableResult
    public func deleteAppKey(app: String, name: String) async throws -> Bool {
        try await backend.deleteAppKey(app: app, name: name)
    }

    /// Deletes `app` and every row of it: its definition and keys, its notifications (those still
    /// queued or sending are cancelled first: what a worker has in flight may still reach its
    /// device, nothing else is sent), their deliveries, counts and ranges, its devices and tags,
    /// Live Activities, channels, webhook events, pace and activity minutes. Rows go `batchSize`
    /// at a time, each batch a short transaction; a deletion cut short is finished by calling
    /// this again (the app stays marked as being deleted until then, and no process serves it).
    @discardableResult
    public func deleteApp(_ app: String, batchSize: Int = 10_000, now: @escaping @Sendable () -> Date = { Date() }) async throws -> AppDeletion {
        try await backend.deleteApp(app, batchSize: batchSize, now: now)
    }
}
