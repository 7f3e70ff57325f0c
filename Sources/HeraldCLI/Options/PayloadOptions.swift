import ArgumentParser
import HeraldCore

/// The payload flags shared by `herald push`, `herald bench` and `herald legacy push`.
struct PayloadOptions: ParsableArguments {
    @Option(help: "Alert text, shown as the body.")
    var alert: String?

    @Option(help: "Alert title.")
    var title: String?

    @Option(help: "Alert subtitle.")
    var subtitle: String?

    @Option(help: "Alert body.")
    var body: String?

    @Option(help: "Badge number; 0 clears the badge.")
    var badge: Int?

    @Option(help: "Sound file name, or 'default'.")
    var sound: String?

    @Option(help: "Notification category.")
    var category: String?

    @Option(name: .customLong("thread-id"), help: "Thread ID for grouping.")
    var threadID: String?

    @Flag(name: .customLong("content-available"), help: "Silent background push (content-available: 1).")
    var contentAvailable = false

    @Flag(name: .customLong("mutable-content"), help: "Route through the Notification Service Extension.")
    var mutableContent = false

    @Option(name: .customLong("interruption-level"), help: "passive, active, time-sensitive or critical.")
    var interruptionLevel: InterruptionLevel?

    @Option(name: .customLong("relevance-score"), help: "Relevance score, 0 to 1.")
    var relevanceScore: Double?

    @Option(name: .customLong("custom"), help: ArgumentHelp("A custom key beside aps (repeatable).", valueName: "KEY=JSON"))
    var custom: [String] = []

    @Option(name: .customLong("payload"), help: ArgumentHelp("A raw JSON payload file, sent byte for byte ('-' for stdin).", valueName: "FILE"))
    var payloadFile: String?

    /// Whether any flag that builds a payload was given.
    var buildsPayload: Bool {
        alert != nil || title != nil || subtitle != nil || body != nil || badge != nil || sound != nil
            || category != nil || threadID != nil || contentAvailable || mutableContent
            || interruptionLevel != nil || relevanceScore != nil || !custom.isEmpty
    }

    /// Whether any payload flag (or `--payload`) was given.
    var isGiven: Bool { buildsPayload || payloadFile != nil }

    /// The payload to send, and whether it is a pure background push (which makes `background`
    /// the default push type).
    func makePayload() throws -> (payload: EncodedPayload, contentAvailableOnly: Bool) {
        if let payloadFile {
            guard !buildsPayload else {
                throw CommandFailure.usage("--payload sends a file as it is; it cannot be combined with --alert, --title, --badge, --custom and the other payload flags")
            }
            let bytes = try FileContents.readArgument(payloadFile, what: "payload file")
            let payload: EncodedPayload
            do {
                payload = try EncodedPayload(validating: bytes)
            } catch {
                throw CommandFailure.usage("payload file '\(payloadFile)': \(error.message)")
            }
            return (payload, payload.isContentAvailableOnly)
        }
        let payload = try makeTypedPayload()
        do {
            return (try payload.encode(), payload.aps?.isContentAvailableOnly ?? false)
        } catch {
            throw CommandFailure.usage(error.message)
        }
    }

    func makeTypedPayload() throws -> Payload {
        guard buildsPayload else {
            throw CommandFailure.usage("no payload: give --alert TEXT, --title/--body, --badge N, --content-available, --custom KEY=JSON, or --payload FILE")
        }
        if alert != nil, title != nil || subtitle != nil || body != nil {
            throw CommandFailure.usage("use --alert TEXT or --title/--subtitle/--body, not both")
        }
        if let badge, badge < 0 {
            throw CommandFailure.usage("--badge must be 0 or more (0 clears the badge), got \(badge)")
        }
        if let relevanceScore, !relevanceScore.isFinite {
            throw CommandFailure.usage("--relevance-score must be a finite number")
        }
        var aps = APS(
            badge: badge,
            sound: sound.map(Sound.named),
            threadID: threadID,
            category: category,
            contentAvailable: contentAvailable,
            mutableContent: mutableContent,
            interruptionLevel: interruptionLevel,
            relevanceScore: relevanceScore
        )
        if let alert {
            aps.alert = .text(alert)
        } else if title != nil || subtitle != nil || body != nil {
            aps.alert = .content(AlertContent(title: title.map(AlertText.text), subtitle: subtitle.map(AlertText.text), body: body.map(AlertText.text)))
        }
        var payload = Payload(aps: aps)
        for argument in custom {
            guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
                throw CommandFailure.usage("--custom takes KEY=JSON, e.g. --custom 'order={\"id\":42}', got '\(argument)'")
            }
            let key = String(argument[..<equals])
            let text = argument[argument.index(after: equals)...]
            guard payload.custom[key] == nil else {
                throw CommandFailure.usage("--custom key '\(key)' is given twice")
            }
            let value: JSONValue
            do {
                value = try JSONValue(parsing: Array(text.utf8))
            } catch {
                throw CommandFailure.usage("--custom \(key): the value is not JSON (\(error)); quote strings, e.g. \(key)='\"text\"'")
            }
            do {
                try payload.setCustom(key, value)
            } catch {
                throw CommandFailure.usage("--custom \(key): \(error.message)")
            }
        }
        return payload
    }
}

extension InterruptionLevel: ExpressibleByArgument {}
extension PushType: ExpressibleByArgument {}
extension PushPriority: ExpressibleByArgument {
    public init?(argument: String) {
        guard let value = Int(argument) else { return nil }
        self.init(rawValue: value)
    }

    public static var allValueStrings: [String] { allCases.map(\.description) }
}
