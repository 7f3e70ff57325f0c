/// The `aps.alert` value: a plain string (shown as the body) or a dictionary (apns-spec §3.1, §3.2).
public enum Alert: Sendable, Hashable {
    /// The body text alone.
    case text(String)
    /// The dictionary form with title, subtitle, body, localisation keys and more.
    case content(AlertContent)

    /// An alert with a title and a body.
    public static func titled(_ title: String, body: String, subtitle: String? = nil) -> Alert {
        var content = AlertContent()
        content.title = .text(title)
        content.subtitle = subtitle.map { .text($0) }
        content.body = .text(body)
        return .content(content)
    }
}

extension Alert: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
}

/// The keys of the `alert` dictionary (apns-spec §3.2).
public struct AlertContent: Sendable, Hashable {
    /// `title`.
    public var title: AlertText?
    /// `subtitle`.
    public var subtitle: AlertText?
    /// `body`.
    public var body: AlertText?
    /// `launch-image`.
    public var launchImage: String?
    /// `title-loc-key`: a Localizable.strings key for the title.
    public var titleLocKey: String?
    /// `title-loc-args`: values for the `%@` placeholders of the title.
    public var titleLocArgs: [String]?
    /// `subtitle-loc-key`.
    public var subtitleLocKey: String?
    /// `subtitle-loc-args`.
    public var subtitleLocArgs: [String]?
    /// `loc-key`: a Localizable.strings key for the body.
    public var locKey: String?
    /// `loc-args`: values for the `%@` placeholders of the body.
    public var locArgs: [String]?
    /// `action-loc-key` (deprecated by Apple).
    public var actionLocKey: String?
    /// `summary-arg` (legacy, iOS 12 era).
    public var summaryArg: String?
    /// `summary-arg-count` (legacy, iOS 12 era).
    public var summaryArgCount: Int?
    /// `action`: Safari website push only, the button label.
    public var action: String?
    /// `sound` inside the alert: Live Activity alerts carry their sound here (§3.1).
    public var sound: Sound?

    public init(
        title: AlertText? = nil,
        subtitle: AlertText? = nil,
        body: AlertText? = nil
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
    }
}

/// A title, subtitle or body: plain text, or for Live Activity alerts a localisation key with
/// arguments, written `{"loc-key": …, "loc-args": […]}` (apns-spec §3.1).
public enum AlertText: Sendable, Hashable, ExpressibleByStringLiteral {
    case text(String)
    case localized(key: String, arguments: [String] = [])

    public init(stringLiteral value: String) { self = .text(value) }
}
