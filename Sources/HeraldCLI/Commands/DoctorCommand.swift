import ArgumentParser
import HeraldGateway

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `herald doctor`: what would fail when `herald serve` starts or first sends, found before it
/// does, in one table.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a gateway's configuration before it runs: the file, each credential, the trust store, the database, the clock, the listen address.",
        discussion: """
            Takes herald serve's options. Prints one row per check (ok, warning or error), each \
            problem with what to do, and exits 1 when any check is an error (warnings allowed), \
            2 for a usage error. It changes nothing: no database is created or migrated, the \
            listen address is bound and closed at once. See docs/doctor.md.
            """
    )

    enum Output: String, ExpressibleByArgument, CaseIterable, Sendable {
        case table, json
    }

    @Option(help: ArgumentHelp("The gateway's configuration file.", valueName: "FILE.json"))
    var config: String

    @Option(help: ArgumentHelp(
        "The database, instead of the file's, as for herald serve: sqlite:PATH or postgres://USER@HOST:PORT/DB (a password belongs in PGPASSWORD or --database-file).",
        valueName: "URL"
    ))
    var database: String?

    @Option(name: .customLong("database-file"), help: ArgumentHelp("A file holding the database URL (one line), as for herald serve.", valueName: "FILE"))
    var databaseFile: String?

    @Option(help: ArgumentHelp("Where the API will listen, instead of the file's.", valueName: "HOST:PORT"))
    var listen: String?

    @Option(name: .customLong("trust-store"), help: ArgumentHelp(
        "A PEM bundle of CA certificates to check instead of the system's (\(DoctorTrustStore.systemBundles[0])): the one herald serve's host will have.",
        valueName: "FILE"
    ))
    var trustStore: String?

    @Option(help: ArgumentHelp("table or json.", valueName: "FORMAT"))
    var output: Output = .table

    func run() async throws {
        var report = DoctorReport()
        if let configuration = try loadConfiguration(into: &report) {
            report.append(contentsOf: DoctorCredentials.check(configuration))
            report.append(contentsOf: DoctorCredentials.checkAPICertificate(configuration))
            report.append(contentsOf: DoctorTrustStore.check(configuration, bundle: trustStore))
            report.append(contentsOf: await DoctorDatabase.check(configuration.database))
            report.append(await DoctorListen.check(configuration.listen))
        }
        switch output {
        case .table: report.tableLines.forEach(Terminal.line)
        case .json: Terminal.line(report.json)
        }
        Terminal.flush()
        if report.hasErrors { throw ExitCode(1) }
    }

    /// The configuration as `herald serve` would load it (the same overrides, through its own
    /// code), and the file's row. A file that fails to load is an error row; an option that is
    /// wrong is a usage error, as for `herald serve`.
    private func loadConfiguration(into report: inout DoctorReport) throws -> GatewayConfiguration? {
        let name = "configuration \(config)"
        do {
            _ = try GatewayConfiguration.load(file: config)
        } catch {
            if error.field.isEmpty, !error.message.hasPrefix("not valid JSON") {
                report.append(.error(name, "cannot be read (\(error.message)): check the path given to --config and its permissions"))
            } else {
                report.append(.error(name, "\(error.field.isEmpty ? "" : error.field + ": ")\(error.message): correct it and run herald doctor again"))
            }
            return nil
        }
        var arguments = ["--config", config]
        if let database { arguments += ["--database", database] }
        if let databaseFile { arguments += ["--database-file", databaseFile] }
        if let listen { arguments += ["--listen", listen] }
        let serve: ServeCommand
        do {
            serve = try ServeCommand.parse(arguments)
        } catch {
            throw CommandFailure.usage(ServeCommand.message(for: error))
        }
        let configuration = try serve.loadConfiguration()
        let keys = configuration.apiKeys.count
        // A gateway may hold thousands of apps: the first few name them.
        let ids = configuration.apps.prefix(5).map(\.id).joined(separator: ", ") + (configuration.apps.count > 5 ? ", …" : "")
        report.append(
            .ok(
                name,
                "loads: \(configuration.apps.count) app\(configuration.apps.count == 1 ? "" : "s") (\(ids)), "
                    + "\(keys) API key\(keys == 1 ? "" : "s")\(configuration.tls == nil ? "" : ", HTTPS")"
            )
        )
        if let notice = configuration.formNotice { report.append(.warning(name, notice)) }
        return configuration
    }
}
