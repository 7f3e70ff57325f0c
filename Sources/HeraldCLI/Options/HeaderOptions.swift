import ArgumentParser
import HeraldCore

/// The APNs header flags shared by the sending commands.
struct HeaderOptions: ParsableArguments {
    @Option(help: "apns-topic: the bundle ID, plus the push type's suffix (e.g. .voip).")
    var topic: String?

    @Option(name: .customLong("push-type"), help: "apns-push-type (default: background for a content-available-only payload, else alert).")
    var pushType: PushType?

    @Option(help: "apns-priority: 10, 5 or 1 (default: 5 for background, else 10).")
    var priority: PushPriority?

    @Option(help: ArgumentHelp("apns-expiration in UNIX seconds; 0 stores nothing.", valueName: "UNIX_SECONDS"))
    var expiration: Int?

    @Option(name: .customLong("collapse-id"), help: "apns-collapse-id (at most 64 bytes).")
    var collapseID: String?

    @Option(name: .customLong("apns-id"), help: ArgumentHelp("apns-id for a single notification.", valueName: "UUID"))
    var apnsID: String?

    /// The validated headers; `contentAvailableOnly` picks the default push type.
    func makeHeaders(contentAvailableOnly: Bool, topicRequired: Bool = true) throws -> PushHeaders {
        if topicRequired, topic == nil {
            throw CommandFailure.usage("--topic is required: the app's bundle ID (plus the push type's suffix, e.g. com.example.app.voip)")
        }
        do {
            let headers = PushHeaders(
                pushType: pushType ?? (contentAvailableOnly ? .background : .alert),
                topic: topic,
                priority: priority,
                expiration: try expiration.map(PushExpiration.init(unixSeconds:)),
                collapseID: collapseID,
                apnsID: try apnsID.map(PushHeaders.apnsID)
            )
            try headers.validate()
            return headers
        } catch {
            throw CommandFailure.usage("\(error.reason): \(error.detail ?? "invalid header")")
        }
    }
}
