import ArgumentParser
import HeraldCore

/// `herald push`: build notifications for tokens and send them, or print them with `--dry-run`.
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send notifications to device tokens.",
        discussion: """
            Exit status: 0 when every notification was accepted (or printed), 1 when some were \
            rejected, 2 for usage or configuration errors.
            """
    )

    @OptionGroup(title: "Tokens") var tokens: TokenOptions
    @OptionGroup(title: "Payload") var payload: PayloadOptions
    @OptionGroup(title: "Headers") var headers: HeaderOptions
    @OptionGroup(title: "Environment") var environment: EnvironmentOptions
    @OptionGroup(title: "Token authentication") var credentials: CredentialOptions

    @Flag(name: .customLong("dry-run"), help: "Print the HTTP/2 request for each token instead of sending it.")
    var dryRun = false

    @Option(help: "Output format: text or json (one object per line).")
    var output: OutputFormat = .text

    func run() async throws {
        let environment = try self.environment.makeEnvironment()
        let (payload, contentAvailableOnly) = try self.payload.makePayload()
        let headers = try self.headers.makeHeaders(contentAvailableOnly: contentAvailableOnly)
        do {
            try payload.checkSize(limit: headers.pushType.maximumPayloadSize)
        } catch {
            throw CommandFailure.usage("\(error.reason): \(error.detail ?? "")")
        }
        let key = try credentials.makeProviderKey()

        guard dryRun else {
            throw CommandFailure.usage("sending needs the HTTP/2 client, which is not built yet; use --dry-run to print the requests")
        }
        let issuer = key.map { ProviderTokenIssuer.shared(for: $0) }
        let printer = DryRunPrinter(environment: environment, format: output)
        let failures = try forEachNotification(headers: headers, payload: payload) { notification in
            let token = try issuer?.currentToken()
            printer.print(notification, token: token)
        }
        Terminal.flush()
        if failures > 0 { throw ExitCode(CommandFailure.usageStatus) }
    }

    /// Builds a notification for each token and hands it to `body`. A bad token is reported on
    /// stderr and skipped; the others are still processed. Returns how many tokens were bad.
    func forEachNotification(
        headers: PushHeaders,
        payload: EncodedPayload,
        _ body: (PushNotification) throws -> Void
    ) throws -> Int {
        var failures = 0
        var count = 0
        for (text, origin) in try tokens.tokenTexts() {
            count += 1
            if headers.apnsID != nil, count == 2 {
                throw CommandFailure.usage("--apns-id names one notification; it cannot be given with more than one token")
            }
            do {
                let token = try DeviceToken(text)
                try body(PushNotification(token: token, headers: headers, payload: payload))
            } catch let error as APNSError {
                failures += 1
                Terminal.error("\(origin): \(error.reason): \(error.detail ?? "")")
            }
        }
        guard count > 0 else {
            throw CommandFailure.usage("no device tokens: give them as arguments or with --tokens-file FILE")
        }
        return failures
    }
}
