import HeraldCore
import HeraldStore

extension GatewayConfiguration {
    /// One of an app's webhooks: where its events are POSTed, the secret they are signed with,
    /// which events it wants, and how long an event is retried before it is dropped.
    public struct Webhook: Sendable {
        /// An `https://` or `http://` URL (`url` in the file). It is also the webhook's key in
        /// the outbox: events wait for the URL, and one that no longer belongs to a webhook of
        /// the app when it is sent is dropped.
        public var url: String
        /// The HMAC-SHA256 key of `Herald-Signature` (`secretEnv` in the file names the
        /// environment variable that holds it).
        public var secret: WebhookSecret
        /// The events it wants (`events` in the file; when absent, all but `delivery.receipt`).
        public var events: Set<WebhookEventType>
        /// How long after an event was written it is still retried (`giveUpAfterSeconds` in the
        /// file). Default 24 hours.
        public var giveUpAfter: Duration = Self.defaultGiveUpAfter

        public static let defaultGiveUpAfter: Duration = .seconds(24 * 3600)

        public init(url: String, secret: WebhookSecret, events: Set<WebhookEventType> = WebhookEventType.byDefault) {
            self.url = url
            self.secret = secret
            self.events = events
        }
    }

    /// What the outbox records: each app's webhooks and the events they want.
    public var webhookInterest: WebhookInterest {
        var interest = WebhookInterest()
        interest.maximumPending = webhookSender.maximumPendingPerApp
        for app in apps {
            for hook in app.webhooks { interest.add(app: app.id, hook: hook.url, events: hook.events) }
        }
        return interest
    }
}

/// A webhook's signing secret. It never appears in a description, a log line or an error.
public struct WebhookSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The key's bytes.
    public let bytes: [UInt8]

    public init(_ text: String) { bytes = Array(text.utf8) }

    public var description: String { "<webhook secret>" }
    public var debugDescription: String { description }
}

/// How webhook events are sent, for every app (`webhookSender` in the file).
public struct WebhookSenderSettings: Sendable, Hashable {
    /// The first retry of an event whose receiver did not answer 2xx waits this long, doubling
    /// up to ``maximumRetryDelay`` (``Backoff``, with 10 % jitter). Default 5 s.
    public var initialRetryDelay: Duration = .seconds(5)
    /// Default 10 minutes.
    public var maximumRetryDelay: Duration = .seconds(600)
    /// How long one POST may take, its answer's body included. Default 10 s.
    public var timeout: Duration = .seconds(10)
    /// How often an idle sender looks for events. Default 1 s.
    public var pollInterval: Duration = .seconds(1)
    /// Events one sender claims and sends at once. Default 32.
    public var batchSize = 32
    /// The most events (one per event and webhook) one app's outbox holds; past it, new events
    /// of the app are refused, counted and logged (``WebhookInterest/maximumPending``).
    /// Default 1,000,000.
    public var maximumPendingPerApp = WebhookInterest.defaultMaximumPending
    /// The most of a receiver's answer read (the rest is not waited for). 64 KiB.
    public static let maximumResponseBytes = 64 << 10

    public init() {}
}

extension WebhookSenderSettings {
    init(_ fields: JSONFields) throws(FieldError) {
        self.init()
        try fields.only(["retryInitialSeconds", "retryMaximumSeconds", "timeoutSeconds", "pollIntervalSeconds", "batchSize", "maximumPendingPerApp"])
        func bounded(_ name: String, _ range: ClosedRange<Int>) throws(FieldError) -> Int? {
            guard let value = try fields.int(name) else { return nil }
            guard range.contains(value) else { throw FieldError(fields.at(name), "must be \(range.lowerBound) to \(range.upperBound)") }
            return value
        }
        if let value = try bounded("retryInitialSeconds", 1...3600) { initialRetryDelay = .seconds(value) }
        if let value = try bounded("retryMaximumSeconds", 1...86400) { maximumRetryDelay = .seconds(value) }
        if let value = try bounded("timeoutSeconds", 1...120) { timeout = .seconds(value) }
        if let value = try bounded("pollIntervalSeconds", 1...60) { pollInterval = .seconds(value) }
        if let value = try bounded("batchSize", 1...1000) { batchSize = value }
        if let value = try bounded("maximumPendingPerApp", 1...100_000_000) { maximumPendingPerApp = value }
    }
}

extension GatewayConfiguration.App {
    /// `webhooks`: `[{"url", "secretEnv", "events"?, "giveUpAfterSeconds"?}]`; inline (the admin
    /// API), `secret` holds the signing secret instead of `secretEnv`.
    static func webhooks(_ fields: JSONFields, environment: [String: String]) throws(FieldError) -> [GatewayConfiguration.Webhook] {
        var hooks: [GatewayConfiguration.Webhook] = []
        for hook in try fields.objects("webhooks") {
            try hook.only(["url", "secretEnv", "secret", "events", "giveUpAfterSeconds"])
            try hook.checkCredentialForm(files: ["secretEnv"], inline: ["secret"])
            let url = try hook.requiredString("url")
            guard isWebhookURL(url) else {
                throw FieldError(hook.at("url"), "must be an https:// or http:// URL with a host, at most \(JSONFields.maximumURLLength) bytes, without spaces")
            }
            guard !hooks.contains(where: { $0.url == url }) else { throw FieldError(hook.at("url"), "is given twice for this app") }
            let secret: String
            switch hook.credentials {
            case .files:
                let name = try hook.requiredString("secretEnv")
                // The message names the variable, never its value.
                guard let value = environment[name] else { throw FieldError(hook.at("secretEnv"), "the environment variable \(name) is not set") }
                guard !value.isEmpty else { throw FieldError(hook.at("secretEnv"), "the environment variable \(name) is empty") }
                secret = value
            case .inline:
                secret = try hook.requiredString("secret")
            }
            var events = WebhookEventType.byDefault
            if let names = try hook.strings("events") {
                guard !names.isEmpty else { throw FieldError(hook.at("events"), "list at least one event, or leave events out for all of them") }
                events = []
                for (index, name) in names.enumerated() {
                    guard let event = WebhookEventType(rawValue: name) else {
                        throw FieldError(
                            "\(hook.at("events"))[\(index)]",
                            "unknown event '\(PeerText(name, limit: 64))' (expected one of: \(WebhookEventType.allCases.map(\.rawValue).sorted().joined(separator: ", ")))"
                        )
                    }
                    events.insert(event)
                }
            }
            var webhook = GatewayConfiguration.Webhook(url: url, secret: WebhookSecret(secret), events: events)
            if let seconds = try hook.int("giveUpAfterSeconds") {
                guard (1...(30 * 86400)).contains(seconds) else { throw FieldError(hook.at("giveUpAfterSeconds"), "must be 1 to \(30 * 86400) seconds") }
                webhook.giveUpAfter = .seconds(seconds)
            }
            hooks.append(webhook)
        }
        return hooks
    }

    /// An `http://` or `https://` URL with a host, printable, without spaces.
    static func isWebhookURL(_ text: String) -> Bool {
        let rest: Substring
        if text.hasPrefix("https://") {
            rest = text.dropFirst(8)
        } else if text.hasPrefix("http://") {
            rest = text.dropFirst(7)
        } else {
            return false
        }
        let host = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return !host.isEmpty && !host.hasPrefix(":") && !host.contains("@") && text.utf8.count <= JSONFields.maximumURLLength && PeerText.isSafe(text)
            && !text.contains(" ")
    }
}
