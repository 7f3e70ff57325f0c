#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where the store lives: `sqlite:PATH` (one file, nothing to install; `sqlite::memory:` for a
/// throwaway one) or `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (`postgresql://` too). Its
/// description never shows the password.
///
/// TLS to PostgreSQL follows libpq's `sslmode`: `disable`, `prefer`, `require` (encrypted, the
/// server's certificate not checked) or `verify-full` (encrypted, the certificate checked against
/// the CAs in `sslrootcert=FILE`, or the system's, and the host name). Without `sslmode`, a
/// loopback host or a Unix socket gets `prefer` and any other host `require`: a password never
/// crosses a network in the clear by default.
public enum StoreURL: Sendable, Hashable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(Postgres)

    public struct Postgres: Sendable, Hashable {
        public var host: String
        public var port: Int
        public var user: String
        public var password: String?
        public var database: String
        public var tls: TLSMode

        /// CA certificates (PEM) that `verify-full` trusts instead of the system's.
        public var rootCertificateFile: String?

        public enum TLSMode: String, Sendable, Hashable {
            case disable, prefer, require
            case verifyFull = "verify-full"
        }

        public init(host: String, port: Int = 5432, user: String, password: String?, database: String, tls: TLSMode? = nil) {
            self.host = host
            self.port = port
            self.user = user
            self.password = password
            self.database = database
            self.tls = tls ?? Self.defaultTLS(host: host)
        }

        /// `prefer` for a loopback host or a Unix socket (a path), `require` for any other.
        public static func defaultTLS(host: String) -> TLSMode {
            let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            let isLoopback = bare == "localhost" || bare == "::1" || bare.hasPrefix("127.") || bare.hasPrefix("/")
            return isLoopback ? .prefer : .require
        }
    }

    /// Parses `text`.
    ///
    /// - Throws: ``StoreError`` with code `invalidURL`, saying what is wrong (without the password).
    public init(_ text: String) throws(StoreError) {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw StoreError(.invalidURL, "sqlite: needs a file path, as in sqlite:herald.db (or sqlite::memory:)") }
            self = .sqlite(path: path)
            return
        }
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") else {
            throw StoreError(.invalidURL, "a database URL is sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE")
        }
        guard let components = URLComponents(string: text), let host = components.host, !host.isEmpty else {
            throw StoreError(.invalidURL, "\(Self.redacted(text)) has no host: postgres://USER:PASSWORD@HOST:PORT/DATABASE")
        }
        guard let user = components.user, !user.isEmpty else {
            throw StoreError(.invalidURL, "\(Self.redacted(text)) has no user: postgres://USER:PASSWORD@HOST:PORT/DATABASE")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw StoreError(.invalidURL, "\(Self.redacted(text)) names no database: postgres://USER:PASSWORD@HOST:PORT/DATABASE")
        }
        var tls: Postgres.TLSMode?
        var rootCertificateFile: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value.flatMap(Postgres.TLSMode.init(rawValue:)) else {
                    throw StoreError(.invalidURL, "\(Self.redacted(text)): sslmode is disable, prefer, require or verify-full")
                }
                tls = mode
            case "sslrootcert":
                guard let file = item.value, !file.isEmpty else {
                    throw StoreError(.invalidURL, "\(Self.redacted(text)): sslrootcert needs a file of CA certificates (PEM)")
                }
                rootCertificateFile = file
            default:
                throw StoreError(.invalidURL, "\(Self.redacted(text)): unknown option \(item.name) (only sslmode and sslrootcert)")
            }
        }
        if rootCertificateFile != nil, tls != .verifyFull {
            throw StoreError(.invalidURL, "\(Self.redacted(text)): sslrootcert is used only with sslmode=verify-full")
        }
        var postgres = Postgres(host: host, port: components.port ?? 5432, user: user, password: components.password, database: database, tls: tls)
        postgres.rootCertificateFile = rootCertificateFile
        self = .postgres(postgres)
    }

    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let postgres):
            "postgres://\(postgres.user)\(postgres.password == nil ? "" : ":***")@\(postgres.host):\(postgres.port)/\(postgres.database)"
        }
    }

    /// `text` with any password replaced, for messages.
    static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text) else { return "the database URL" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "the database URL"
    }
}
