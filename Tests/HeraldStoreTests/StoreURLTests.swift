import HeraldStore
import Testing

/// Database URLs: TLS defaults that never send a password in the clear across a network, and
/// libpq's `sslmode` and `sslrootcert`.
@Suite("Store URLs")
struct StoreURLTests {
    @Test("without sslmode, a loopback host or a Unix socket prefers TLS and any other host requires it", arguments: [
        ("postgres://u@127.0.0.1/db", StoreURL.Postgres.TLSMode.prefer), ("postgres://u@localhost:5433/db", .prefer),
        ("postgres://u@[::1]:5432/db", .prefer), ("postgres://u@127.9.9.9/db", .prefer),
        ("postgres://u@db.internal/db", .require), ("postgres://u@10.0.0.5:5432/db", .require), ("postgres://u@[2001:db8::1]/db", .require),
        ("postgres://u@db.internal/db?sslmode=disable", .disable), ("postgres://u@db.internal/db?sslmode=prefer", .prefer),
        ("postgres://u@127.0.0.1/db?sslmode=require", .require),
    ])
    func defaultTLS(text: String, expected: StoreURL.Postgres.TLSMode) throws {
        guard case .postgres(let postgres) = try StoreURL(text) else { Issue.record("not postgres"); return }
        #expect(postgres.tls == expected)
    }

    @Test("verify-full takes a CA file in sslrootcert; sslrootcert alone, or an unknown mode, is refused without the password")
    func verifyFull() throws {
        guard case .postgres(let postgres) = try StoreURL("postgres://u:secret@db.internal/db?sslmode=verify-full&sslrootcert=/etc/ca.pem") else {
            Issue.record("not postgres")
            return
        }
        #expect(postgres.tls == .verifyFull && postgres.rootCertificateFile == "/etc/ca.pem")
        for text in ["postgres://u:secret@db.internal/db?sslrootcert=/etc/ca.pem", "postgres://u:secret@db.internal/db?sslmode=verify-ca",
                     "postgres://u:secret@db.internal/db?sslmode=verify-full&sslrootcert="] {
            let error = #expect(throws: StoreError.self) { try StoreURL(text) }
            #expect(error?.code == .invalidURL)
            #expect(error?.message.contains("secret") == false)
        }
    }
}
