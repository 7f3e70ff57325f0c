import ArgumentParser
import HeraldCore
import HeraldIdentity
import HeraldLegacy

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `herald legacy`: the binary interface Apple retired in 2021, for old gateways and simulators.
struct LegacyGroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "legacy",
        abstract: "The legacy binary interface: send through a gateway, read the feedback service, benchmark.",
        discussion: """
            Apple retired the binary interface (gateway.push.apple.com:2195, feedback.push.apple.com:2196) \
            on 31 March 2021; these commands are for gateways, simulators and old back ends that still \
            speak it. Authentication is by certificate only.
            """,
        subcommands: [LegacyPushCommand.self, LegacyFeedbackCommand.self, LegacyBenchCommand.self]
    )
}

/// `herald legacy push`: one outcome per token through a binary gateway.
struct LegacyPushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send notifications through a legacy binary gateway.",
        discussion: """
            Each notification is accepted when the gateway sends no error response for it within \
            --settle seconds (the interface answers only on error). Exit status: 0 when every \
            notification was accepted, 1 when some were rejected or failed, 2 for usage or \
            configuration errors.
            """
    )

    @OptionGroup(title: "Tokens") var tokens: TokenOptions
    @OptionGroup(title: "Payload") var payload: PayloadOptions
    @OptionGroup(title: "Certificate") var certificate: CertificateOptions
    @OptionGroup(title: "Trust") var trust: TrustOptions

    @Option(help: ArgumentHelp("The gateway, e.g. gateway.sandbox.push.apple.com:2195 or a mock's 127.0.0.1:PORT.", valueName: "HOST:PORT"))
    var gateway: String?

    @Option(help: ArgumentHelp("The command to frame notifications with: 0 (simple), 1 (enhanced) or 2 (frame).", valueName: "0|1|2"))
    var command: Int = 2

    @Option(help: ArgumentHelp("Expiry in UNIX seconds (commands 1 and 2); 0 or none means do not store.", valueName: "SECONDS"))
    var expiration: Int?

    @Option(help: ArgumentHelp("Priority item (command 2): 10 or 5.", valueName: "10|5"))
    var priority: PushPriority?

    @Option(help: ArgumentHelp("Seconds without an error response after which a notification counts as accepted.", valueName: "SECONDS"))
    var settle: Double = 1

    @Option(help: "Output format: text or json (one object per line).")
    var output: OutputFormat = .text

    func run() async throws {
        guard let gateway else {
            throw CommandFailure.usage("say where to send: --gateway HOST:PORT (Apple's retired gateways were gateway.push.apple.com:2195 and gateway.sandbox.push.apple.com:2195)")
        }
        let endpoint = try parseEndpoint(gateway, option: "--gateway")
        guard let command = HeraldLegacy.LegacyCommand(rawValue: UInt8(clamping: max(0, self.command))), (0...2).contains(self.command) else {
            throw CommandFailure.usage("--command must be 0, 1 or 2, got \(self.command)")
        }
        guard settle > 0, settle <= 3600 else { throw CommandFailure.usage("--settle must be more than 0 and at most 3600 seconds, got \(settle)") }
        guard let identity = try certificate.makeIdentity() else {
            throw CommandFailure.usage("the binary interface needs a certificate: --cert FILE.p12|FILE.pem (apns-spec §4)")
        }
        var expiration: PushExpiration?
        if let seconds = self.expiration {
            do {
                expiration = try PushExpiration(unixSeconds: seconds)
            } catch {
                throw CommandFailure.usage("--expiration: \(error.detail ?? "")")
            }
        }
        if priority == .low { throw CommandFailure.usage("--priority takes 10 or 5 on the binary interface") }
        let payload = try makePayload(limit: command.maximumPayloadSize)

        var configuration = LegacyClient.Configuration(gateway: endpoint, identity: identity)
        configuration.trustRoots = try trust.trustRoots()
        configuration.command = command
        configuration.settleInterval = .milliseconds(Int64((settle * 1000).rounded()))
        let framePriority = command == .frame ? priority : nil
        // LegacyNotification refuses tokens that are not 32 bytes (apns-spec §4.3).
        let notifications = TokenNotifications(texts: try tokens.tokenTexts()) {
            try LegacyNotification(token: $0, payload: payload, expiration: expiration, priority: framePriority)
        }
        let printer = LegacyOutcomePrinter(format: output)
        let progress = ProgressBar(total: tokens.tokensFile == nil ? tokens.tokens.count : nil, label: "sending", enabled: !Terminal.stdoutIsTerminal)
        try await withLegacyClient(configuration: configuration) { client in
            for try await outcome in client.send(contentsOf: notifications) {
                printer.print(outcome)
                progress.advance()
            }
        }
        progress.finish()
        try printer.finish(badTokens: notifications.badTokens)
    }

    /// The payload, with a built alert shortened to fit the command's limit (custom keys kept);
    /// a `--payload` file over the limit is refused.
    private func makePayload(limit: Int) throws -> EncodedPayload {
        let (encoded, _) = try payload.makePayload()
        guard encoded.count > limit else { return encoded }
        guard payload.payloadFile == nil else {
            throw CommandFailure.usage("the payload file is \(encoded.count) bytes; command \(command) takes at most \(limit) (use --command 2 for up to 2048)")
        }
        do {
            let shortened = try payload.makeTypedPayload().encode(fittingIn: limit)
            Terminal.error("note: the alert was shortened to fit the \(limit) bytes of command \(command)")
            return shortened
        } catch {
            throw CommandFailure.usage("the payload is \(encoded.count) bytes and cannot be shortened to the \(limit) bytes of command \(command): \(error)")
        }
    }
}

/// `herald legacy feedback`: the tokens the feedback service reports, one line each.
struct LegacyFeedbackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feedback",
        abstract: "Read the legacy feedback service: tokens whose app is gone, with when.",
        discussion: """
            Prints one line per tuple: TIMESTAMP TOKEN in text (ISO 8601, UTC), or {"timestamp": UNIX \
            seconds, "token": hex} in JSON. The service clears its list once read. Drop a token only \
            if the device has not registered it again since the timestamp.
            """
    )

    @Option(help: ArgumentHelp("The feedback service, e.g. feedback.sandbox.push.apple.com:2196 or a mock's 127.0.0.1:PORT.", valueName: "HOST:PORT"))
    var server: String?

    @OptionGroup(title: "Certificate") var certificate: CertificateOptions
    @OptionGroup(title: "Trust") var trust: TrustOptions

    @Option(help: ArgumentHelp("Stop reading after this many seconds if the service does not close.", valueName: "SECONDS"))
    var timeout: Double = 60

    @Option(help: "Output format: text or json (one object per line).")
    var output: OutputFormat = .text

    func run() async throws {
        guard let server else {
            throw CommandFailure.usage("say which service to read: --server HOST:PORT (Apple's retired services were feedback.push.apple.com:2196 and feedback.sandbox.push.apple.com:2196)")
        }
        let endpoint = try parseEndpoint(server, option: "--server")
        guard timeout > 0, timeout <= 86_400 else { throw CommandFailure.usage("--timeout must be more than 0 and at most 86400 seconds (a day), got \(timeout)") }
        guard let identity = try certificate.makeIdentity() else {
            throw CommandFailure.usage("the feedback service needs the push certificate: --cert FILE.p12|FILE.pem (apns-spec §4.6)")
        }
        var reader = LegacyFeedbackReader(service: endpoint, identity: identity)
        reader.trustRoots = try trust.trustRoots()
        reader.timeout = .milliseconds(Int64((timeout * 1000).rounded()))
        let tuples: [FeedbackTuple]
        do {
            tuples = try await reader.read()
        } catch let error as LegacyError {
            throw CommandFailure(error.message, status: 1)
        }
        for tuple in tuples {
            switch output {
            case .text:
                Terminal.line("\(tuple.timestamp.formatted(.iso8601)) \(tuple.token.hex)")
            case .json:
                var writer = JSONWriter(capacity: 120)
                writer.beginObject()
                writer.key("timestamp"); writer.int(Int(tuple.timestamp.timeIntervalSince1970))
                writer.key("token"); writer.string(tuple.token.hex)
                writer.endObject()
                Terminal.line(bytes: writer.bytes)
            }
        }
        Terminal.flush()
        Terminal.error("feedback: \(tuples.count) token\(tuples.count == 1 ? "" : "s")")
    }
}

/// `HOST:PORT` for `option`, or a usage error saying what is wrong.
func parseEndpoint(_ text: String, option: String) throws -> LegacyEndpoint {
    do {
        return try LegacyEndpoint(parsing: text)
    } catch {
        throw CommandFailure.usage("\(option): \(error.message)")
    }
}

/// Prints one line per legacy outcome (text, or JSON objects `{"token","result","status",
/// "reason","attempts"}`) and keeps the counts for the summary.
final class LegacyOutcomePrinter {
    private let format: OutputFormat
    private var tally = OutcomeTally()
    var total: Int { tally.total }
    var accepted: Int { tally.accepted }

    init(format: OutputFormat) {
        self.format = format
    }

    func print(_ outcome: LegacyOutcome) {
        tally.add(outcome)
        let token = outcome.token.hex
        switch format {
        case .text:
            switch outcome.result {
            case .accepted:
                Terminal.line("\(token) accepted")
            case .rejected(let status):
                Terminal.line("\(token) rejected \(status)" + (status.invalidatesToken ? ": remove this token" : ""))
            case .failed(let error):
                Terminal.line("\(token) failed \(error.code): \(error.message)")
            }
        case .json:
            var writer = JSONWriter(capacity: 160)
            writer.beginObject()
            writer.key("token"); writer.string(token)
            switch outcome.result {
            case .accepted:
                writer.key("result"); writer.string("accepted")
                writer.key("status"); writer.null()
                writer.key("reason"); writer.null()
            case .rejected(let status):
                writer.key("result"); writer.string("rejected")
                writer.key("status"); writer.int(Int(status.rawValue))
                writer.key("reason"); writer.string(status.description)
            case .failed(let error):
                writer.key("result"); writer.string("failed")
                writer.key("status"); writer.null()
                writer.key("reason"); writer.string(error.code.description)
                writer.key("detail"); writer.string(error.message)
            }
            writer.key("invalidates_token"); writer.bool(outcome.invalidatesToken)
            writer.key("attempts"); writer.int(outcome.attempts)
            writer.endObject()
            Terminal.line(bytes: writer.bytes)
        }
    }

    /// The summary and the exit status; see ``OutcomeTally/finish(badTokens:format:retriesLabel:)``.
    func finish(badTokens: Int) throws {
        try tally.finish(badTokens: badTokens, format: format, retriesLabel: "re-sent")
    }
}
