import HeraldCore

/// One row of `herald doctor`'s table: how a check went, what it looked at, and one line that
/// says what it found (and, for a warning or an error, what to do).
struct DoctorCheck: Sendable, Hashable {
    enum Status: String, Sendable, Hashable {
        case ok, warning, error
    }

    var status: Status
    /// What was checked: `configuration herald.json`, `app shop: APNs provider key ABC123DEFG`.
    var name: String
    /// One line: what was found, and what to do when it is not ok.
    var detail: String

    static func ok(_ name: String, _ detail: String) -> DoctorCheck { DoctorCheck(status: .ok, name: name, detail: detail) }
    static func warning(_ name: String, _ detail: String) -> DoctorCheck { DoctorCheck(status: .warning, name: name, detail: detail) }
    static func error(_ name: String, _ detail: String) -> DoctorCheck { DoctorCheck(status: .error, name: name, detail: detail) }
}

/// `herald doctor`'s rows, printed as a table or as JSON.
struct DoctorReport: Sendable {
    var checks: [DoctorCheck] = []

    /// Whether any check failed: the command then exits 1.
    var hasErrors: Bool { checks.contains { $0.status == .error } }

    mutating func append(_ check: DoctorCheck) { checks.append(check) }

    mutating func append(contentsOf more: [DoctorCheck]) { checks.append(contentsOf: more) }

    /// The table's lines: a header, then a row per check. Names and details hold text from files
    /// and peers (a certificate's subject, a database's error), so each is escaped for the
    /// terminal and kept to one line.
    var tableLines: [String] {
        let rows = checks.map { check in
            (check.status.rawValue, PeerText(check.name, limit: 80).description, PeerText(check.detail, limit: 600).description)
        }
        let statusWidth = max("STATUS".count, rows.map(\.0.count).max() ?? 0)
        let nameWidth = max("CHECK".count, rows.map(\.1.count).max() ?? 0)
        func line(_ status: String, _ name: String, _ detail: String) -> String {
            status.padding(to: statusWidth) + "  " + name.padding(to: nameWidth) + "  " + detail
        }
        var lines = [line("STATUS", "CHECK", "DETAIL")]
        lines += rows.map { line($0.0, $0.1, $0.2) }
        let counts = Dictionary(grouping: checks, by: \.status).mapValues(\.count)
        lines.append(
            "\(checks.count) check\(checks.count == 1 ? "" : "s"): \(counts[.ok] ?? 0) ok, \(counts[.warning] ?? 0) warning\(counts[.warning] == 1 ? "" : "s"), "
                + "\(counts[.error] ?? 0) error\(counts[.error] == 1 ? "" : "s")"
        )
        return lines
    }

    /// `{"ok": Bool, "checks": [{"status", "name", "detail"}]}`: for scripts and monitoring. JSON
    /// escapes control characters itself; the text is cut as the table's is.
    var json: String {
        let rows: [JSONValue] = checks.map { check in
            .object([
                "status": .string(check.status.rawValue),
                "name": .string(String(check.name.prefix(200))),
                "detail": .string(String(check.detail.prefix(1000))),
            ])
        }
        return JSONValue.object(["ok": .bool(!hasErrors), "checks": .array(rows)]).jsonString
    }
}

extension String {
    /// The string with spaces after it up to `width` characters (never cut).
    fileprivate func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
