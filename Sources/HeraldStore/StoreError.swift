/// Something the store could not do, with a stable code and words that say what to do. Never
/// holds a password.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// The database URL is not one the store understands.
        public static let invalidURL = Code(name: "invalidURL")
        /// The database cannot be reached (down, refused, restarting): try again.
        public static let unavailable = Code(name: "unavailable")
        /// The database refused this client for good: the password or user is wrong, or the
        /// database named does not exist. Another attempt will not mend it; the URL will.
        public static let refused = Code(name: "refused")
        /// The database cannot be opened as it is: an SQLite path that is a directory, a file
        /// that is not an SQLite database or is damaged, or one this user may not write. Waiting
        /// will not mend it; the path or the file will.
        public static let cannotOpen = Code(name: "cannotOpen")
        /// The database was migrated by a newer Herald than this one.
        public static let newerSchema = Code(name: "newerSchema")
        /// A value given to the store is out of range or malformed.
        public static let invalidInput = Code(name: "invalidInput")
        /// The database's disk is full: the write was not stored (what was stored before stays).
        /// Waiting will not mend it; freeing space on the database's disk will. SQLite's
        /// `SQLITE_FULL`, PostgreSQL's SQLSTATE 53100 (`disk_full`).
        public static let storageFull = Code(name: "storageFull")
        /// The database answered with an error.
        public static let databaseError = Code(name: "databaseError")
        /// The lease on a batch was lost (it ran out and another worker took it).
        public static let leaseLost = Code(name: "leaseLost")
        /// What the request names does not exist (a Live Activity no token was reported for).
        public static let notFound = Code(name: "notFound")
        /// The request conflicts with what is stored (an event for a Live Activity that ended).
        public static let conflict = Code(name: "conflict")
        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
