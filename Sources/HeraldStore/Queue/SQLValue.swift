import HeraldCore

/// A value bound to a statement, or read from a row, as both databases hold it.
enum SQLValue: Sendable, Hashable {
    case null
    case int(Int64)
    /// A real number: only ever read (a column edited by hand), never written.
    case real(Double)
    case text(String)
    case blob([UInt8])

    static func int(_ value: Int) -> SQLValue { .int(Int64(value)) }
    static func text(_ value: String?) -> SQLValue { value.map { .text($0) } ?? .null }
    static func int(_ value: Int64?) -> SQLValue { value.map { .int($0) } ?? .null }
    static func code(_ value: some StoredCode) -> SQLValue { .int(Int64(value.rawValue)) }
    static func code(_ value: PlatformCode) -> SQLValue { .int(Int64(value.platform.code)) }

    /// A list of texts as one JSON array, which a statement reads with ``SQLDialect/list(_:_:)``.
    static func texts(_ values: some Sequence<String>) -> SQLValue {
        var writer = JSONWriter(capacity: 256)
        writer.beginArray()
        for value in values { writer.string(value) }
        writer.endArray()
        return .json(writer)
    }

    /// Devices by address, as rows `[token, hash]` (each token's ``KeySpace/hash(_:)``), which a
    /// statement reads with ``SQLDialect/devices(_:in:hashAt:)``.
    static func devices(_ tokens: some Sequence<String>) -> SQLValue {
        var writer = JSONWriter(capacity: 256)
        writer.beginArray()
        for token in tokens {
            writer.beginArray()
            writer.string(token)
            writer.int(Int(KeySpace.hash(token)))
            writer.endArray()
        }
        writer.endArray()
        return .json(writer)
    }

    /// A list of integers as one JSON array, which a statement reads with ``SQLDialect/list(_:_:)``.
    static func ints(_ values: some Sequence<Int64>) -> SQLValue {
        var writer = JSONWriter(capacity: 256)
        writer.beginArray()
        for value in values { writer.int(Int(value)) }
        writer.endArray()
        return .json(writer)
    }

    /// JSON written by the caller (an array of rows or values), as ``rows(_:)`` and ``texts(_:)`` write it.
    static func json(_ writer: JSONWriter) -> SQLValue {
        .text(String(decoding: writer.bytes, as: UTF8.self))
    }

    /// Rows as one JSON array of arrays, which a statement reads with ``SQLDialect/rows(_:)``.
    static func rows(_ rows: [[SQLValue]]) -> SQLValue {
        var writer = JSONWriter(capacity: 64 * rows.count + 2)
        writer.beginArray()
        for row in rows {
            writer.beginArray()
            for value in row {
                switch value {
                case .null, .blob: writer.null()
                case .int(let int): writer.int(Int(int))
                case .real(let real): writer.int(Int(real))
                case .text(let text): writer.string(text)
                }
            }
            writer.endArray()
        }
        writer.endArray()
        return .json(writer)
    }

    /// The value as an integer, or `nil` when it is none or holds no integer exactly. A column
    /// may hold anything whatever its type (written by hand, or by arithmetic that overflowed):
    /// one such row must not crash a claim.
    var integer: Int64? {
        switch self {
        case .int(let int): int
        case .real(let real): Int64(exactly: real.rounded(.towardZero))
        case .text(let text): Int64(text)
        case .blob, .null: nil
        }
    }

    var string: String? {
        switch self {
        case .text(let text): text
        case .int(let int): String(int)
        case .real(let real): String(real)
        case .blob(let bytes): String(decoding: bytes, as: UTF8.self)
        case .null: nil
        }
    }

    var isNull: Bool { self == .null }
}

/// One row of a result, by column position.
struct SQLRow: Sendable {
    var values: [SQLValue]

    /// The value of `column`, of a statement whose select list its type makes (``SQLColumns``).
    subscript<Column: SQLColumns>(_ column: Column) -> SQLValue { self[column.rawValue] }
    func int<Column: SQLColumns>(_ column: Column) -> Int64? { int(column.rawValue) }
    func int<Column: SQLColumns>(_ column: Column, default value: Int) -> Int { int(column.rawValue, default: value) }
    func text<Column: SQLColumns>(_ column: Column) -> String? { text(column.rawValue) }
    func blob<Column: SQLColumns>(_ column: Column) -> [UInt8]? { blob(column.rawValue) }
    /// The same, for columns that follow `first` others in the statement's select list.
    func int<Column: SQLColumns>(_ column: Column, after first: Int) -> Int64? { int(first + column.rawValue) }
    func text<Column: SQLColumns>(_ column: Column, after first: Int) -> String? { text(first + column.rawValue) }
    func blob<Column: SQLColumns>(_ column: Column, after first: Int) -> [UInt8]? { blob(first + column.rawValue) }

    subscript(_ index: Int) -> SQLValue { index < values.count ? values[index] : .null }
    func int(_ index: Int) -> Int64? { self[index].integer }
    func int(_ index: Int, default value: Int) -> Int { self[index].integer.flatMap { Int(exactly: $0) } ?? value }
    func text(_ index: Int) -> String? { self[index].string }
    func blob(_ index: Int) -> [UInt8]? {
        if case .blob(let bytes) = self[index] { return bytes }
        return nil
    }
}

/// The columns a statement selects, by name: the select list is made from the cases, in their
/// order, so a row is read by name and the two cannot drift apart.
protocol SQLColumns: CaseIterable, RawRepresentable where RawValue == Int {
    /// The column as SQL names it.
    var sqlName: String { get }
}

extension SQLColumns {
    /// Every column, in order, as a select list.
    static var selectList: String { allCases.map(\.sqlName).joined(separator: ", ") }
    /// The same, each qualified by `table` (an alias in a join).
    static func selectList(of table: String) -> String { allCases.map { "\(table).\($0.sqlName)" }.joined(separator: ", ") }
}

/// A column type, where a statement must name one (PostgreSQL cannot tell a parameter's type
/// from `$1 IS NULL`, nor an element's from a JSON array).
enum SQLType: String, Sendable {
    case text = "TEXT"
    case bigint = "BIGINT"
    case integer = "INTEGER"
    case smallint = "SMALLINT"
}

/// How a database spells what the queue's statements need beyond the SQL both share. Statements
/// are written once, with `$1`, `$2`… for parameters, and these for the rest.
protocol SQLDialect: Sendable {
    /// Parameter `index` where its type must be named (`$3 IS NULL`).
    func parameter(_ index: Int, _ type: SQLType) -> String
    /// A subquery of one column: the elements of the JSON array parameter `index`, as `type`
    /// (`token IN (\(d.list(2, .text)))`).
    func list(_ index: Int, _ type: SQLType) -> String
    /// The arrays of the JSON array parameter `index` as rows with a column `value`; read their
    /// elements with ``element(_:_:_:)``.
    func rows(_ index: Int) -> String
    /// Element `index` of `row`'s `value` (a row of ``rows(_:)``) as `type`.
    func element(_ row: String, _ index: Int, _ type: SQLType) -> String
    /// Locks the rows a `SELECT` picked, skipping those another transaction holds (PostgreSQL's
    /// `FOR UPDATE SKIP LOCKED`); nothing on a database with one writer at a time.
    func skipLocked(of table: String?) -> String
    /// Locks the rows a `SELECT` picked, waiting for them.
    var forUpdate: String { get }
    /// The larger and the smaller of two values.
    func greatest(_ a: String, _ b: String) -> String
    func least(_ a: String, _ b: String) -> String
    /// `expression` of every row joined by newlines, in `order`; in no promised order without one.
    func joinLines(_ expression: String, orderBy order: String?) -> String
    /// Whether devices are kept in key order, `(app, hash, token)`, rather than by token: then a
    /// device is found by its hash and token, and lists of devices page in key order. SQLite:
    /// yes (a bulk import then writes one B-tree in random order, not two); PostgreSQL: no.
    var devicesInKeyOrder: Bool { get }
    /// The conflict target of a device row: its primary key.
    var deviceKey: String { get }
    /// `alias`'s token is among the rows of JSON parameter `index`, whose element 0 is a token
    /// and element `hashAt` its hash (``SQLValue/devices(_:)`` writes `[token, hash]`): by hash
    /// and token where devices are kept in key order, by token otherwise.
    func devices(_ alias: String, in index: Int, hashAt: Int) -> String
    /// The statement as the database reads it (SQLite: `?1` for `$1`).
    func spell(_ sql: String) -> String
}
