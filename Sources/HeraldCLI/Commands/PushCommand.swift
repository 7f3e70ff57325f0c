import ArgumentParser
import HeraldAPNS
import HeraldCore
import HeraldIdentity
import Synchronization

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
    @OptionGroup(title: "Certificate authentication") var certificate: CertificateOptions
    @OptionGroup(title: "Connections") var tuning: ConnectionTuningOptions

    @Flag(name: .customLong("dry-run"), help: "Print the HTTP/2 request for each token instead of sending it.")
    var dryRun = false

    @Option(help: "Output format: text or json (one object per line).")
    var output: OutputFormat = .text

    func run() async throws {
        let environment = try self.environment.makeEnvironment()
        let (payload, contentAvailableOnly) = try self.payload.makePayload()
        if credentials.authKey != nil && certificate.certificate != nil {
            throw CommandFailure.usage("use token authentication (--auth-key) or a certificate (--cert), not both")
        }
        let key = try credentials.makeProviderKey()
        let identity = try certificate.makeIdentity()
        // With a certificate the topic defaults to the certificate's (apns-spec §7.2).
        let headers = try self.headers.makeHeaders(contentAvailableOnly: contentAvailableOnly, topicRequired: identity == nil)
        do {
            try payload.checkSize(limit: headers.pushType.maximumPayloadSize)
        } catch {
            throw CommandFailure.usage("\(error.reason): \(error.detail ?? "")")
        }

        if dryRun {
            let issuer = key.map { ProviderTokenIssuer.shared(for: $0) }
            let printer = DryRunPrinter(environment: environment, format: output)
            let failures = try forEachNotification(headers: headers, payload: payload) { notification in
                let token = try issuer?.currentToken()
                printer.print(notification, token: token)
            }
            Terminal.flush()
            if failures > 0 { throw ExitCode(CommandFailure.usageStatus) }
            return
        }

        let credentials: APNSCredentials
        if let key {
            credentials = .providerToken(key)
        } else if let identity {
            credentials = .certificate(identity)
        } else {
            throw CommandFailure.usage("sending needs credentials: --auth-key FILE.p8 --key-id KID --team-id TEAM, or --cert FILE.p12|FILE.pem")
        }
        var configuration = APNSClient.Configuration(environment: environment, credentials: credentials)
        configuration.trustRoots = try tuning.trustRoots()
        configuration.pool.maximumConnections = tuning.connections
        configuration.pool.maximumInFlight = tuning.concurrency

        if headers.apnsID != nil {
            _ = try forEachNotification(headers: headers, payload: payload) { _ in }  // refuses more than one token
        }
        let notifications = TokenNotifications(texts: try tokens.tokenTexts()) { PushNotification(token: $0, headers: headers, payload: payload) }
        let printer = OutcomePrinter(format: output)
        // A progress bar on stderr when the per-token lines go elsewhere (a file, a pipe).
        let progress = ProgressBar(total: tokens.tokensFile == nil ? tokens.tokens.count : nil, label: "sending", enabled: !Terminal.stdoutIsTerminal)
        try await withAPNSClient(configuration: configuration) { client in
            for try await outcome in client.send(contentsOf: notifications) {
                printer.print(outcome)
                progress.advance()
            }
        }
        progress.finish()
        try printer.finish(badTokens: notifications.badTokens)
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

/// The notifications (HTTP/2 or legacy) for a token list read lazily (a file of millions costs
/// one line at a time). A token that does not parse, or that `make` refuses, is reported on stderr
/// with where it came from and skipped.
struct TokenNotifications<Element>: Sequence, @unchecked Sendable {
    // The token source is iterated once, by the one task that sends: never concurrently.
    private let texts: AnySequence<(text: String, origin: String)>
    private let make: (DeviceToken) throws -> Element
    private let bad = Counter()

    init(texts: AnySequence<(text: String, origin: String)>, make: @escaping (DeviceToken) throws -> Element) {
        self.texts = texts
        self.make = make
    }

    /// Tokens skipped.
    var badTokens: Int { bad.value }

    struct Iterator: IteratorProtocol {
        var texts: AnySequence<(text: String, origin: String)>.Iterator
        let owner: TokenNotifications

        mutating func next() -> Element? {
            while let (text, origin) = texts.next() {
                do {
                    return try owner.make(try DeviceToken(text))
                } catch let error as APNSError {
                    owner.bad.increment()
                    Terminal.error("\(origin): \(error.reason): \(error.detail ?? "")")
                } catch {
                    owner.bad.increment()
                    Terminal.error("\(origin): \(error)")
                }
            }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(texts: texts.makeIterator(), owner: self) }
}

/// A count shared between the sending task and whoever reads it afterwards.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.wrappingAdd(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
