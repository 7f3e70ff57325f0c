import ArgumentParser
import HeraldCore
import HeraldFCM
import NIOSSL

/// `herald fcm`: Firebase Cloud Messaging (HTTP v1) for Android: one-off sends.
struct FCMGroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm",
        abstract: "Firebase Cloud Messaging (HTTP v1) for Android: one-off sends with a service account.",
        subcommands: [FCMSendCommand.self]
    )
}

/// `herald fcm send`: one message to one registration token.
struct FCMSendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send one FCM message to a registration token.",
        discussion: """
            --title/--body (and --data, --priority, --ttl, --collapse-key) build the message; \
            --message sends a raw FCM Message object instead (JSON, or @FILE), with TOKEN set. \
            Exit status: 0 accepted, 1 refused by FCM (the reason is printed, and whether to forget \
            the token), 2 usage errors.
            """
    )

    @Argument(help: "The FCM registration token.")
    var token: String
    @Option(help: ArgumentHelp("The service account's JSON key file.", valueName: "FILE"))
    var serviceAccount: String
    @Option(help: "The notification's title.")
    var title: String?
    @Option(help: "The notification's body.")
    var body: String?
    @Option(help: ArgumentHelp("A data pair for the app (repeatable).", valueName: "KEY=VALUE"))
    var data: [String] = []
    @Option(help: "Android priority: high or normal.")
    var priority: String?
    @Option(help: "Android TTL in seconds: how long FCM keeps the message for an offline device (0 to 2419200).")
    var ttl: Int?
    @Option(help: "Android collapse key: a newer message with the same key replaces this one while it waits.")
    var collapseKey: String?
    @Option(help: ArgumentHelp("A raw FCM Message object instead of --title/--body; @FILE reads a file.", valueName: "JSON"))
    var message: String?
    @Option(help: ArgumentHelp("FCM's origin (a mock's https://127.0.0.1:PORT); the token URI comes from the key file.", valueName: "URL"))
    var endpoint: String = FCMClient.googleEndpoint
    @Option(help: ArgumentHelp("Also trust the CA certificates in this PEM file, for the endpoint and the token URI (a mock's).", valueName: "FILE"))
    var caFile: String?

    func run() async throws {
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(contentsOfFile: serviceAccount)
        } catch {
            throw CommandFailure.usage("--service-account: \(error.message)")
        }
        let fcmMessage = try makeMessage()
        do {
            try fcmMessage.validate()
        } catch {
            throw CommandFailure.usage(error.message)
        }
        var configuration = FCMClient.Configuration(serviceAccount: account)
        configuration.endpoint = endpoint
        if let caFile {
            do {
                configuration.additionalTrustRoots = try NIOSSLCertificate.fromPEMFile(caFile)
            } catch {
                throw CommandFailure.usage("--ca-file '\(caFile)': cannot read PEM certificates (\(error))")
            }
        }
        let outcome: Result<FCMReceipt, FCMSendError>
        do {
            outcome = try await withFCMClient(configuration: configuration) { client in
                do throws(FCMSendError) {
                    return .success(try await client.send(fcmMessage))
                } catch {
                    return .failure(error)
                }
            }
        } catch let error as FCMError {
            throw CommandFailure.usage("--\(error.field ?? "endpoint"): \(error.message)")
        }
        switch outcome {
        case .success(let receipt):
            Terminal.line("accepted: \(receipt.name ?? "(no name)")\(receipt.attempts > 1 ? " after \(receipt.attempts) attempts" : "")")
        case .failure(let error) where error.code == .untrusted:
            throw CommandFailure(status: 1, "not sent: \(error.reason); \(CommandFailure.trustAdvice)")
        case .failure(let error):
            let advice =
                error.isTokenGone ? " (the token is gone: forget it)" : error.isTokenInvalid ? " (the token is invalid for this project: forget it)" : ""
            throw CommandFailure(status: 1, "refused by FCM: \(error)\(advice)")
        }
    }

    private func makeMessage() throws -> FCMMessage {
        if let message {
            guard title == nil, body == nil, data.isEmpty, priority == nil, ttl == nil, collapseKey == nil else {
                throw CommandFailure.usage("give either --message or --title/--body/--data/--priority/--ttl/--collapse-key, not both")
            }
            let text: [UInt8]
            if message.hasPrefix("@") {
                do {
                    text = try FileContents.read(String(message.dropFirst()), limit: 64 << 10)
                } catch {
                    throw CommandFailure.usage("cannot read --message '\(message)': \(error.reason)")
                }
            } else {
                text = Array(message.utf8)
            }
            do {
                return try FCMMessage(raw: try JSONValue(parsing: text), token: token)
            } catch let error as FCMError {
                throw CommandFailure.usage("--message: \(error.message)")
            } catch {
                throw CommandFailure.usage("--message is not JSON: \(error)")
            }
        }
        guard title != nil || body != nil || !data.isEmpty else { throw CommandFailure.usage("give --title/--body, --data or --message") }
        var pairs: [String: String] = [:]
        for pair in data {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw CommandFailure.usage("--data takes KEY=VALUE; got '\(PeerText(pair, limit: 64))'")
            }
            pairs[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        var android: FCMMessage.Android?
        if priority != nil || ttl != nil || collapseKey != nil {
            var options = FCMMessage.Android(timeToLive: ttl.map { .seconds($0) }, collapseKey: collapseKey)
            if let priority {
                guard let value = FCMMessage.Android.Priority(rawValue: priority) else {
                    throw CommandFailure.usage("--priority must be high or normal; got '\(PeerText(priority, limit: 32))'")
                }
                options.priority = value
            }
            android = options
        }
        let notification = title != nil || body != nil ? FCMMessage.Notification(title: title, body: body) : nil
        return FCMMessage(token: token, notification: notification, data: pairs, android: android)
    }
}
