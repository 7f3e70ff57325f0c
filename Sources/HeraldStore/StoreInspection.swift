#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What `herald doctor` asks a database before a gateway starts on it, read without writing or
/// migrating anything (``HeraldStore/inspect()``).
public struct StoreInspection: Sendable, Hashable {
    /// The schema the database is at: 0 when Herald never migrated it.
    public var schema: Int
    /// The schema this build migrates to; a database past it was migrated by a newer Herald.
    public var known: Int
    /// The database server's clock at the moment it answered (SQLite: this machine's).
    public var databaseTime: Date
    /// Whether the database refuses writes: a PostgreSQL standby (in recovery), or a server or
    /// user whose transactions are read-only by default. Always false for SQLite, whose file's
    /// permissions are the operating system's to check.
    public var isReadOnly: Bool
    /// The server's version, for PostgreSQL (`server_version`); `nil` for SQLite.
    public var serverVersion: String?

    public init(schema: Int, known: Int, databaseTime: Date, isReadOnly: Bool, serverVersion: String?) {
        self.schema = schema
        self.known = known
        self.databaseTime = databaseTime
        self.isReadOnly = isReadOnly
        self.serverVersion = serverVersion
    }
}
