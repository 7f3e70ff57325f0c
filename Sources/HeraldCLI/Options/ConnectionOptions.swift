import ArgumentParser
import HeraldCore

/// Which APNs environment: exactly one of `--sandbox`, `--production`, `--host`. There is no default.
struct EnvironmentOptions: ParsableArguments {
    @Flag(help: "Send to the APNs sandbox (development) environment.")
    var sandbox = false

    @Flag(help: "Send to the APNs production environment.")
    var production = false

    @Option(help: ArgumentHelp("Send to another server, e.g. a mock or gateway.", valueName: "https://HOST:PORT"))
    var host: String?

    func makeEnvironment() throws -> APNSEnvironment {
        let chosen = [sandbox, production, host != nil].filter { $0 }.count
        guard chosen == 1 else {
            throw CommandFailure.usage(chosen == 0
                ? "say where to send: --sandbox, --production or --host https://HOST:PORT"
                : "--sandbox, --production and --host exclude each other; give exactly one")
        }
        if sandbox { return .sandbox }
        if production { return .production }
        do {
            return try APNSEnvironment(url: host!)
        } catch {
            throw CommandFailure.usage("--host: \(error.message)")
        }
    }
}

/// Token-based credentials: the `.p8` key with its Key ID and Team ID.
struct CredentialOptions: ParsableArguments {
    @Option(name: .customLong("auth-key"), help: ArgumentHelp("The APNs auth key (.p8) for token authentication.", valueName: "FILE.p8"))
    var authKey: String?

    @Option(name: .customLong("key-id"), help: "The auth key's 10-character Key ID.")
    var keyID: String?

    @Option(name: .customLong("team-id"), help: "The 10-character Team ID.")
    var teamID: String?

    /// The provider key, or `nil` when no token credentials were given.
    func makeProviderKey() throws -> ProviderKey? {
        guard authKey != nil || keyID != nil || teamID != nil else { return nil }
        guard let authKey, let keyID, let teamID else {
            let missing = [("--auth-key", authKey), ("--key-id", keyID), ("--team-id", teamID)].filter { $0.1 == nil }.map(\.0)
            throw CommandFailure.usage("token authentication needs --auth-key, --key-id and --team-id together; missing \(missing.joined(separator: ", "))")
        }
        do {
            return try ProviderKey(contentsOfFile: authKey, keyID: keyID, teamID: teamID)
        } catch {
            throw CommandFailure.usage(error.message)
        }
    }
}

/// `--output text|json`.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text
    case json
}
