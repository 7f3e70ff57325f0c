#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The APNs request headers of one notification, apart from `authorization` (apns-spec §1.4).
///
/// The fields are kept in one shared, immutable object: a copy of the headers retains that one
/// reference, however many of the fields are strings. A bulk send's every notification shares
/// its headers, and each is copied several times on its way (into its request, its outcome), on
/// threads that all count references to the same objects; setting a field makes a new object.
public struct PushHeaders: Sendable, Hashable {
    /// `apns-push-type`. It must match the payload and the topic (§1.5).
    public var pushType: PushType {
        get { storage.values.pushType }
        set { change { $0.pushType = newValue } }
    }
    /// `apns-topic`: the bundle ID plus the push type's suffix. Required with token auth; with a
    /// single-topic certificate APNs defaults to the certificate's topic.
    public var topic: String? {
        get { storage.values.topic }
        set { change { $0.topic = newValue } }
    }
    /// `apns-priority`; `nil` sends ``PushPriority/default(for:)`` (5 for background, else 10).
    public var priority: PushPriority? {
        get { storage.values.priority }
        set { change { $0.priority = newValue } }
    }
    /// `apns-expiration`; `nil` leaves the header out (APNs's default storage policy).
    public var expiration: PushExpiration? {
        get { storage.values.expiration }
        set { change { $0.expiration = newValue } }
    }
    /// `apns-collapse-id`: notifications with the same value are merged on the device. At most 64 bytes.
    public var collapseID: String? {
        get { storage.values.collapseID }
        set { change { $0.collapseID = newValue } }
    }
    /// `apns-id`; `nil` lets APNs generate one and return it.
    public var apnsID: UUID? {
        get { storage.values.apnsID }
        set { change { $0.apnsID = newValue } }
    }

    private var storage: Storage

    private struct Values: Hashable, Sendable {
        var pushType: PushType
        var topic: String?
        var priority: PushPriority?
        var expiration: PushExpiration?
        var collapseID: String?
        var apnsID: UUID?
    }

    private final class Storage: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    private mutating func change(_ body: (inout Values) -> Void) {
        var values = storage.values
        body(&values)
        storage = Storage(values)
    }

    /// Whether `other` holds the very same fields object as these headers: a copy of them, made
    /// without a field set since. Then they are equal, at the cost of comparing two pointers.
    package func isSameInstance(as other: PushHeaders) -> Bool { storage === other.storage }

    public static func == (lhs: PushHeaders, rhs: PushHeaders) -> Bool {
        lhs.isSameInstance(as: rhs) || lhs.storage.values == rhs.storage.values
    }

    public func hash(into hasher: inout Hasher) { storage.values.hash(into: &hasher) }

    /// The largest `apns-collapse-id`, in UTF-8 bytes (§1.4).
    public static let maximumCollapseIDSize = 64

    public init(
        pushType: PushType = .alert,
        topic: String? = nil,
        priority: PushPriority? = nil,
        expiration: PushExpiration? = nil,
        collapseID: String? = nil,
        apnsID: UUID? = nil
    ) {
        storage = Storage(
            Values(pushType: pushType, topic: topic, priority: priority, expiration: expiration, collapseID: collapseID, apnsID: apnsID))
    }

    /// The priority that is sent: the one set, or the push type's default.
    public var effectivePriority: PushPriority {
        priority ?? .default(for: pushType)
    }

    /// Refuses what APNs would refuse, with the reason it would give: a topic that does not fit
    /// the push type (`BadTopic`), an empty topic (`MissingTopic`), priority other than 5 for
    /// `background` (`BadPriority`), an empty or over-long collapse ID (`BadCollapseId`).
    public func validate() throws(APNSError) {
        if let topic { try pushType.validate(topic: topic) }
        if pushType == .background, effectivePriority != .throttled {
            throw APNSError(local: .badPriority, "background pushes must have priority 5, got \(effectivePriority)")
        }
        if let collapseID {
            let size = collapseID.utf8.count
            if size == 0 { throw APNSError(local: .badCollapseId, "apns-collapse-id is empty") }
            // A header value may not hold CR, LF or NUL (RFC 9113 §8.2.1): APNs answers such a
            // request by closing the connection every other notification shares. Other controls
            // are refused too; none has a place in an identifier.
            // Bytes: below 0x80 each is its own scalar, and no byte of a longer one is a control.
            if collapseID.containsUTF8Byte(where: { $0 < 0x20 || $0 == 0x7F }) {
                throw APNSError(local: .badCollapseId, "apns-collapse-id holds a control character (CR, LF, NUL, tab…); use printable text")
            }
            if size > Self.maximumCollapseIDSize {
                throw APNSError(
                    local: .badCollapseId,
                    "apns-collapse-id is \(size) bytes; APNs allows at most \(Self.maximumCollapseIDSize)"
                )
            }
        }
    }

    /// Parses an `apns-id`: a canonical UUID (8-4-4-4-12 hex), any case.
    public static func apnsID(_ text: String) throws(APNSError) -> UUID {
        guard text.utf8.count == 36, let uuid = UUID(uuidString: text) else {
            throw APNSError(local: .badMessageId, "apns-id must be a UUID like 123e4567-e89b-12d3-a456-426614174000, got '\(text)'")
        }
        return uuid
    }

    /// The header fields in the order Herald sends them, `authorization` excluded. `apns-id` is lower case.
    public var fields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(6)
        if let topic { fields.append(("apns-topic", topic)) }
        fields.append(("apns-push-type", pushType.rawValue))
        fields.append(("apns-priority", effectivePriority.description))
        if let expiration { fields.append(("apns-expiration", expiration.description)) }
        if let collapseID { fields.append(("apns-collapse-id", collapseID)) }
        if let apnsID { fields.append(("apns-id", apnsID.uuidString.lowercased())) }
        return fields
    }
}
