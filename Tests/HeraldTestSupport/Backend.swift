import Testing

/// The two store backends every behaviour test of the store and the gateway runs against.
public enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres
    public var testDescription: String { rawValue }

    /// A URL for a new, empty store: a file in `scratch` for SQLite, a database of its own in the
    /// test process's cluster for PostgreSQL. PostgreSQL cases are cancelled (reported skipped)
    /// when its binaries are not installed, unless HERALD_REQUIRE_POSTGRES=1 (CI) makes that a
    /// failure.
    public func storeURL(scratch: ScratchDirectory, name: String = "store.db") async throws -> String {
        switch self {
        case .sqlite:
            return "sqlite:" + scratch.file(name)
        case .postgres:
            if let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired {
                try Test.cancel(Comment(rawValue: reason))
            }
            return try await PostgresCluster.shared().createDatabase()
        }
    }
}
