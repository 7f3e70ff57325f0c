import ArgumentParser
import HeraldCore
import HeraldGateway
import HeraldStore
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `herald serve`: the push gateway.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the push gateway: an HTTP API to register devices and send, workers that deliver, metrics.",
        discussion: """
            The configuration file (JSON) names the database, the apps with their APNs credentials \
            and the API keys; see the README's gateway section. SIGTERM or Ctrl-C stops it: the API \
            first, then the workers finish what is in flight within workers.shutdownGraceSeconds (20 by \
            default) and give back the rest; a second signal stops at once.
            """
    )

    @Option(help: ArgumentHelp("The gateway's configuration file.", valueName: "FILE.json"))
    var config: String

    @Option(help: ArgumentHelp(
        "The database, instead of the file's: sqlite:PATH or postgres://USER@HOST:PORT/DB. A password here is visible in ps: give it in PGPASSWORD, or the whole URL in HERALD_DATABASE_URL or --database-file.",
        valueName: "URL"
    ))
    var database: String?

    @Option(name: .customLong("database-file"), help: ArgumentHelp(
        "A file holding the database URL (one line), instead of the file's: for a URL with a password, readable only by this user.",
        valueName: "FILE"
    ))
    var databaseFile: String?

    @Option(help: ArgumentHelp("Where the API listens, instead of the file's.", valueName: "HOST:PORT"))
    var listen: String?

    @Flag(name: .customLong("workers-only"), help: "Only deliver: no /v1 API (probes and /metrics still answer).")
    var workersOnly = false

    @Flag(name: .customLong("api-only"), help: "Only the API: no workers, no APNs connections.")
    var apiOnly = false

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Option(name: .customLong("log-format"), help: "text (one line per record) or json (one JSON object per line, for log shippers).")
    var logFormat: String = "text"

    func run() async throws {
        guard !(workersOnly && apiOnly) else { throw CommandFailure.usage("--workers-only and --api-only exclude each other") }
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw CommandFailure.usage("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard logFormat == "text" || logFormat == "json" else { throw CommandFailure.usage("--log-format must be text or json") }
        let configuration = try loadConfiguration()
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label in
            if json {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "herald.gateway")
        if let notice = configuration.formNotice { logger.notice("\(notice)") }
        // One registry for the gateway's metrics and the APNs clients' (through swift-metrics).
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let roles: HeraldGateway.Roles = workersOnly ? .workers : apiOnly ? .api : .all
        let database = configuration.database
        let scheme = configuration.tls == nil ? "http" : "https"
        let gateway: HeraldGateway
        let summary = Self.summary(configuration, roles: roles)
        do {
            gateway = try HeraldGateway(configuration: configuration, roles: roles, registry: registry, logger: logger) { address in
                Terminal.line("herald serve listening on \(scheme)://\(address) (\(database); \(summary))")
                Terminal.flush()
            }
        } catch {
            throw CommandFailure.usage("\(config): \(error)")
        }
        // SIGTERM and SIGINT stop gracefully; a second one, or the grace and its margin later, cancels what is left.
        let group = ServiceGroup(
            configuration: {
                var group = ServiceGroupConfiguration(
                    services: gateway.services().map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
                )
                group.maximumGracefulShutdownDuration = configuration.workers.shutdownGrace + WorkerSettings.shutdownMargin
                return group
            }()
        )
        // SIGHUP reads the configuration file again: its apps (topics, hosts, credentials) and
        // API keys take effect without a restart, and the API's TLS certificate and key are read
        // again. A file that fails its checks is refused with the error it would get at start,
        // and the running configuration stays.
        let reloader = Task {
            for await _ in await UnixSignalsSequence(trapping: .sighup) {
                if configuration.tls != nil {
                    do {
                        try gateway.reloadTLS()
                        logger.info("reloaded the TLS certificate and key")
                    } catch {
                        logger.error("cannot reload the TLS certificate; the previous one stays in use", metadata: ["error": "\(error)"])
                    }
                }
                do {
                    let reloaded = try loadConfiguration()
                    let needsRestart = try await gateway.reload(reloaded)
                    if !needsRestart.isEmpty {
                        logger.warning(
                            "the configuration changes settings only a restart applies; they keep their running values",
                            metadata: ["settings": "\(needsRestart.joined(separator: ", "))"]
                        )
                    }
                } catch {
                    logger.error("the configuration was not reloaded; the running one stays", metadata: ["error": "\(error)"])
                }
            }
        }
        defer { reloader.cancel() }
        do {
            try await group.run()
        } catch {
            throw CommandFailure(status: 1, "herald serve stopped: \(error)")
        }
        Terminal.line("herald serve stopped")
    }

    /// The start-up line's account of what this process serves: its apps by platform and its roles.
    static func summary(_ configuration: GatewayConfiguration, roles: HeraldGateway.Roles) -> String {
        let apps = configuration.apps
        let names: [DevicePlatform: String] = [.apns: "APNs", .webpush: "Web Push", .fcm: "FCM"]
        let reached = DevicePlatform.allCases.compactMap { platform -> String? in
            let count = apps.filter { $0.platforms.contains(platform) }.count
            return count > 0 ? "\(count) \(names[platform] ?? platform.rawValue)" : nil
        }.joined(separator: ", ")
        let role = roles == .all ? "API and workers" : roles == .api ? "API only" : "workers only"
        return "\(apps.count) app\(apps.count == 1 ? "" : "s")\(reached.isEmpty ? "" : " (\(reached))"); \(role)"
    }

    /// The configuration file with the command line's and the environment's overrides: the
    /// database URL from, in order, --database, --database-file, HERALD_DATABASE_URL, the file;
    /// --listen over the file's. Read at start and on each SIGHUP.
    func loadConfiguration() throws -> GatewayConfiguration {
        var configuration: GatewayConfiguration
        do {
            configuration = try GatewayConfiguration.load(file: config)
        } catch {
            throw CommandFailure.usage(error.description)
        }
        guard database == nil || databaseFile == nil else { throw CommandFailure.usage("--database and --database-file exclude each other") }
        var databaseURL: (text: String, source: String)?
        if let database {
            databaseURL = (database, "--database")
        } else if let databaseFile {
            let bytes: [UInt8]
            do {
                bytes = try FileContents.read(databaseFile, limit: 64 << 10)
            } catch {
                throw CommandFailure.usage("--database-file: \(error)")
            }
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
            guard let text = String(validating: bytes.drop(while: isSpace).reversed().drop(while: isSpace).reversed(), as: UTF8.self) else {
                throw CommandFailure.usage("--database-file: \(databaseFile) is not UTF-8 text")
            }
            databaseURL = (text, "--database-file \(databaseFile)")
        } else if let text = getenv("HERALD_DATABASE_URL").map({ String(cString: $0) }), !text.isEmpty {
            databaseURL = (text, "HERALD_DATABASE_URL")
        }
        if let (text, source) = databaseURL {
            do {
                configuration.database = try StoreURL(text).withPassword(from: Self.environment)
            } catch {
                throw CommandFailure.usage("\(source): \(error.message)")
            }
        }
        if let listen {
            do {
                configuration.listen = try ListenAddress(parsing: listen)
            } catch {
                throw CommandFailure.usage("--listen: \(error.message)")
            }
        }
        return configuration
    }

    private static var environment: [String: String] {
        guard let password = getenv("PGPASSWORD") else { return [:] }
        return ["PGPASSWORD": String(cString: password)]
    }
}

/// `herald api-key`: a fresh API key and its configuration entry.
struct APIKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api-key",
        abstract: "Make a gateway API key: prints the key (shown once) and the apiKeys entry holding its SHA-256."
    )

    @Option(help: "Who the key is for (shown in logs).")
    var name: String = "backend"

    @Option(name: .customLong("app"), help: ArgumentHelp("An app the key may use (repeatable).", valueName: "APP"))
    var apps: [String] = []

    @Flag(help: "An admin key: it may define apps and their keys through /v1/admin/apps, and use no app.")
    var admin = false

    func run() throws {
        guard admin || !apps.isEmpty else { throw CommandFailure.usage("name the apps the key may use: --app APP (repeatable), or --admin") }
        guard !(admin && !apps.isEmpty) else { throw CommandFailure.usage("an admin key uses no app: --admin excludes --app") }
        let (key, entry) = admin ? APIKey.generateAdmin(name: name) : APIKey.generate(name: name, apps: Set(apps))
        Terminal.line("key: \(key)")
        Terminal.line("apiKeys entry for the configuration file (it holds only the key's SHA-256):")
        Terminal.line(entry.configurationEntry.jsonString)
    }
}
