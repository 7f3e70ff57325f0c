import ArgumentParser
import HeraldCore
import HeraldServer
import HeraldStore
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

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
            first, then the workers finish or give back what they hold (at most 30 s).
            """
    )

    @Option(help: ArgumentHelp("The gateway's configuration file.", valueName: "FILE.json"))
    var config: String

    @Option(help: ArgumentHelp("The database, instead of the file's: sqlite:PATH or postgres://USER@HOST:PORT/DB (password from PGPASSWORD).", valueName: "URL"))
    var database: String?

    @Option(help: ArgumentHelp("Where the API listens, instead of the file's.", valueName: "HOST:PORT"))
    var listen: String?

    @Flag(name: .customLong("workers-only"), help: "Only deliver: no /v1 API (probes and /metrics still answer).")
    var workersOnly = false

    @Flag(name: .customLong("api-only"), help: "Only the API: no workers, no APNs connections.")
    var apiOnly = false

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func run() async throws {
        guard !(workersOnly && apiOnly) else { throw CommandFailure.usage("--workers-only and --api-only exclude each other") }
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw CommandFailure.usage("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var configuration: GatewayConfiguration
        do {
            configuration = try GatewayConfiguration.load(file: config)
        } catch {
            throw CommandFailure.usage(error.description)
        }
        if let database {
            do {
                configuration.database = try StoreURL(database).withPassword(from: Self.environment)
            } catch {
                throw CommandFailure.usage("--database: \(error.message)")
            }
        }
        if let listen {
            do {
                configuration.listen = try ListenAddress(parsing: listen)
            } catch {
                throw CommandFailure.usage("--listen: \(error.message)")
            }
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "herald.gateway")
        // One registry for the gateway's metrics and the APNs clients' (through swift-metrics).
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let roles: HeraldGateway.Roles = workersOnly ? .workers : apiOnly ? .api : .all
        let database = configuration.database
        let gateway: HeraldGateway
        do {
            gateway = try HeraldGateway(configuration: configuration, roles: roles, registry: registry, logger: logger) { address in
                Terminal.line("herald serve listening on http://\(address) (\(database))")
                Terminal.flush()
            }
        } catch {
            throw CommandFailure.usage("\(config): \(error)")
        }
        // SIGTERM and SIGINT stop gracefully; a second one, or 25 s later, cancels what is left.
        let group = ServiceGroup(
            configuration: {
                var group = ServiceGroupConfiguration(services: [.init(service: gateway)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
                group.maximumGracefulShutdownDuration = .seconds(25)
                return group
            }()
        )
        do {
            try await group.run()
        } catch {
            throw CommandFailure(status: 1, "herald serve stopped: \(error)")
        }
        Terminal.line("herald serve stopped")
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

    func run() throws {
        guard !apps.isEmpty else { throw CommandFailure.usage("name the apps the key may use: --app APP (repeatable)") }
        let (key, entry) = APIKey.generate(name: name, apps: Set(apps))
        Terminal.line("key: \(key)")
        Terminal.line("apiKeys entry for the configuration file (it holds only the key's SHA-256):")
        Terminal.line(entry.configurationEntry.jsonString)
    }
}
