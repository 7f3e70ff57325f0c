import Foundation

/// Something that happened to a notification on the device, to report to the gateway.
public struct HeraldEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The Notification Service Extension ran for the notification: it reached the device.
        case received
        /// The user tapped the notification (`UNNotificationDefaultActionIdentifier`).
        case opened
        /// The user dismissed it (`UNNotificationDismissActionIdentifier`; iOS reports it only for
        /// a category created with `.customDismissAction`).
        case dismissed
        /// The user chose one of the category's actions, by its identifier (1 to 64 bytes).
        case clicked(action: String)

        /// `UNNotificationDefaultActionIdentifier`'s value.
        public static let defaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
        /// `UNNotificationDismissActionIdentifier`'s value.
        public static let dismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"
        /// The longest action identifier the receipt route takes, in UTF-8 bytes.
        public static let maximumActionLength = 64

        /// The event of a `UNNotificationResponse`'s `actionIdentifier`: ``opened`` for the
        /// default action, ``dismissed`` for the dismiss action, ``clicked(action:)`` otherwise.
        public init(actionIdentifier: String) {
            switch actionIdentifier {
            case Self.defaultActionIdentifier: self = .opened
            case Self.dismissActionIdentifier: self = .dismissed
            default: self = .clicked(action: actionIdentifier)
            }
        }

        /// The event's name on the wire: `received`, `opened`, `dismissed` or `clicked`.
        public var name: String {
            switch self {
            case .received: "received"
            case .opened: "opened"
            case .dismissed: "dismissed"
            case .clicked: "clicked"
            }
        }

        /// The action's identifier, for ``clicked(action:)``.
        public var action: String? {
            if case .clicked(let action) = self { action } else { nil }
        }

        /// The kind named `name` on the wire, with its action; `nil` for anything else.
        init?(name: String, action: String?) {
            switch (name, action) {
            case ("received", nil): self = .received
            case ("opened", nil): self = .opened
            case ("dismissed", nil): self = .dismissed
            case ("clicked", let action?): self = .clicked(action: action)
            default: return nil
            }
        }

        /// Whether the route takes it: a clicked action's identifier is 1 to 64 bytes.
        var isValid: Bool {
            guard let action else { return true }
            return (1...Self.maximumActionLength).contains(action.utf8.count)
        }
    }

    /// What happened.
    public var kind: Kind
    /// The notification it happened to.
    public var receipt: HeraldReceipt
    /// When it happened: the queue drops events older than its ``HeraldReceiptQueue/Limits/maximumAge``.
    public var date: Date

    /// An event that happened to the notification with `receipt`, at `date` (now by default).
    public init(_ kind: Kind, receipt: HeraldReceipt, date: Date = Date()) {
        self.kind = kind
        self.receipt = receipt
        self.date = date
    }

    /// What makes two events the same report: the queue holds one event per key.
    struct Key: Hashable {
        var token: String
        var kind: Kind
    }

    var key: Key { Key(token: receipt.token, kind: kind) }
}
