import ArgumentParser

/// The `herald` command.
public struct Herald: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Apple Push Notifications from a Linux server.",
        version: "0.1.0",
        subcommands: [
            DemoCommand.self, PushCommand.self, MockCommand.self, BenchGroupCommand.self, PassCommand.self, PushPackageCommand.self,
            LegacyGroupCommand.self, ServeCommand.self, APIKeyCommand.self, WebPushGroupCommand.self, FCMGroupCommand.self, DoctorCommand.self,
        ]
    )

    public init() {}

    /// Runs the command line and returns the exit status: 0 success, 1 some notifications
    /// rejected, 2 usage or configuration errors (one line on stderr).
    public static func run(arguments: [String]? = nil) async -> Int32 {
        do {
            var command = try parseAsRoot(arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            return 0
        } catch let failure as CommandFailure {
            Terminal.error(failure.message)
            return failure.status
        } catch let exit as ExitCode {
            Terminal.flush()
            return exit.rawValue
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                Terminal.line(fullMessage(for: error))
                return 0
            }
            Terminal.error(message(for: error) + " (see 'herald --help')")
            return CommandFailure.usageStatus
        }
    }
}
