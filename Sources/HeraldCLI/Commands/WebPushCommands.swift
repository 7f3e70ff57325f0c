import ArgumentParser
import HeraldCore
import HeraldWebPush
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// `herald webpush`: Web Push (RFC 8030/8291/8292) for browsers: keys and one-off sends.
struct WebPushGroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webpush",
        abstract: "Web Push for browsers (Safari 16+, Chrome, Firefox, Edge): VAPID keys and one-off sends.",
        subcommands: [WebPushKeygenCommand.self, WebPushPublicKeyCommand.self, WebPushSendCommand.self]
    )
}

/// `herald webpush keygen`: a new VAPID key.
struct WebPushKeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make a VAPID key: writes the private key (PEM, mode 0600) and prints the public key a page subscribes with.",
        discussion: """
            The printed public key is the applicationServerKey for
            registration.pushManager.subscribe({userVisibleOnly: true, applicationServerKey: "<key>"}).
            """
    )

    @Option(name: .customLong("out"), help: ArgumentHelp("Where to write the private key; an existing file is never overwritten.", valueName: "FILE"))
    var output: String = "vapid.pem"

    func run() throws {
        let key = VAPIDKey.generate()
        let descriptor = open(output, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            let reason = errno == EEXIST ? "it exists; choose another --out or remove it" : String(cString: strerror(errno))
            throw CommandFailure.usage("cannot write '\(output)': \(reason)")
        }
        let pem = Array(key.pemRepresentation.utf8)
        let written = pem.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == pem.count else { throw CommandFailure.usage("cannot write '\(output)': short write") }
        Terminal.line("private key: \(output) (keep it secret; every subscription is bound to it)")
        Terminal.line("public key (applicationServerKey): \(key.publicKeyBase64URL)")
    }
}

/// `herald webpush public-key`: the public half of a VAPID key file.
struct WebPushPublicKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "public-key", abstract: "Print a VAPID key file's public key (the applicationServerKey).")

    @Option(help: ArgumentHelp("The VAPID private key (PEM: PKCS#8 or SEC1).", valueName: "FILE"))
    var vapidKey: String

    func run() throws {
        do {
            Terminal.line(try VAPIDKey(contentsOfFile: vapidKey).publicKeyBase64URL)
        } catch {
            throw CommandFailure.usage(error.message)
        }
    }
}

/// `herald webpush send`: one message to one subscription.
struct WebPushSendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send one Web Push message to a subscription (what a page's subscription.toJSON() gives).",
        discussion: """
            With --title and --body the message is WebKit's declarative format ("web_push": 8030), \
            which Safari 18.4+ shows without a service worker; other browsers read the same JSON in \
            their service worker. --payload sends any text instead. Exit status: 0 accepted, 1 \
            refused by the push service (the reason is printed), 2 usage errors.
            """
    )

    @Option(help: ArgumentHelp("The subscription's JSON file.", valueName: "FILE"))
    var subscription: String
    @Option(help: ArgumentHelp("The VAPID private key (PEM).", valueName: "FILE"))
    var vapidKey: String
    @Option(help: ArgumentHelp("The VAPID contact: mailto:… or https://….", valueName: "URL"))
    var subject: String
    @Option(help: "The notification's title (declarative format).")
    var title: String?
    @Option(help: "The notification's body (declarative format).")
    var body: String?
    @Option(help: ArgumentHelp("The https URL opened when the notification is clicked (declarative format; required with --title).", valueName: "URL"))
    var navigate: String?
    @Option(help: ArgumentHelp("The message's text instead of --title/--body; @FILE reads a file.", valueName: "TEXT"))
    var payload: String?
    @Option(help: "TTL: seconds the push service keeps the message for an offline browser (0: now or never).")
    var ttl: Int = 86400
    @Option(help: "Urgency: very-low, low, normal or high.")
    var urgency: String?
    @Option(help: "Topic: a newer message with the same topic replaces this one while it waits (at most 32 of A-Z a-z 0-9 - _).")
    var topic: String?
    @Option(help: ArgumentHelp("Also trust the CA certificates in this PEM file (a mock's).", valueName: "FILE"))
    var caFile: String?
    @Flag(help: "Accept an http: endpoint on a loopback address (a mock without TLS).")
    var allowLoopbackHTTP = false
    @Option(name: .customLong("allow-host"), help: ArgumentHelp("Also send to this push service's host (a UnifiedPush distributor); .example.net allows every name under it. Repeatable.", valueName: "HOST"))
    var allowedHosts: [String] = []
    @Flag(help: "Send to loopback and private-network addresses too (a mock on 127.0.0.1, a push service on your own network).")
    var allowPrivateAddresses = false

    private var policy: WebPushSubscription.Policy {
        .init(allowsLoopbackHTTP: allowLoopbackHTTP, allowedHosts: allowedHosts, allowsPrivateAddresses: allowPrivateAddresses)
    }

    func run() async throws {
        let subscription = try loadSubscription()
        let message = try makeMessage()
        let signer: VAPIDSigner
        do {
            signer = try VAPIDSigner(key: try VAPIDKey(contentsOfFile: vapidKey), subject: subject)
        } catch {
            throw CommandFailure.usage(error.message)
        }
        var configuration = WebPushClient.Configuration(vapid: signer)
        configuration.subscriptionPolicy = policy
        if let caFile {
            do {
                configuration.additionalTrustRoots = try NIOSSLCertificate.fromPEMFile(caFile)
            } catch {
                throw CommandFailure.usage("--ca-file '\(caFile)': cannot read PEM certificates (\(error))")
            }
        }
        let outcome: Result<WebPushReceipt, WebPushSendError> = try await withWebPushClient(configuration: configuration) { client in
            do throws(WebPushSendError) {
                return .success(try await client.send(message, to: subscription))
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let receipt):
            Terminal.line("accepted by \(subscription.origin)\(receipt.attempts > 1 ? " after \(receipt.attempts) attempts" : "")")
        case .failure(let error) where error.code == .untrusted:
            throw CommandFailure(status: 1, "not sent to \(subscription.origin): \(error.reason); \(CommandFailure.trustAdvice)")
        case .failure(let error):
            let advice = error.isSubscriptionGone ? " (the subscription is gone: forget it)" : ""
            throw CommandFailure(status: 1, "refused by \(subscription.origin): \(error)\(advice)")
        }
    }

    private func loadSubscription() throws -> WebPushSubscription {
        let bytes: [UInt8]
        do {
            bytes = try FileContents.read(subscription, limit: 64 << 10)
        } catch {
            throw CommandFailure.usage("cannot read --subscription '\(subscription)': \(error.reason)")
        }
        do {
            return try WebPushSubscription(json: bytes, policy: policy)
        } catch {
            throw CommandFailure.usage("--subscription '\(subscription)': \(error.message)")
        }
    }

    private func makeMessage() throws -> WebPushMessage {
        let text: [UInt8]
        if let payload {
            guard title == nil, body == nil else { throw CommandFailure.usage("give either --payload or --title/--body, not both") }
            if payload.hasPrefix("@") {
                do {
                    text = try FileContents.read(String(payload.dropFirst()), limit: 64 << 10)
                } catch {
                    throw CommandFailure.usage("cannot read --payload '\(payload)': \(error.reason)")
                }
            } else {
                text = Array(payload.utf8)
            }
        } else {
            guard let title else { throw CommandFailure.usage("give --title (and --body, --navigate) or --payload") }
            guard let navigate, navigate.hasPrefix("https://") else {
                throw CommandFailure.usage("--navigate https://… is required with --title: WebKit's declarative format opens it on a click")
            }
            var notification: [String: JSONValue] = ["title": .string(title), "navigate": .string(navigate)]
            if let body { notification["body"] = .string(body) }
            text = Array(JSONValue.object(["web_push": .int(8030), "notification": .object(notification)]).jsonString.utf8)
        }
        var parsedUrgency: WebPushMessage.Urgency?
        if let urgency {
            guard let value = WebPushMessage.Urgency(rawValue: urgency) else {
                throw CommandFailure.usage("--urgency must be very-low, low, normal or high; got '\(urgency)'")
            }
            parsedUrgency = value
        }
        do {
            return try WebPushMessage(payload: text, timeToLive: ttl, urgency: parsedUrgency, topic: topic)
        } catch {
            throw CommandFailure.usage(error.message)
        }
    }
}
