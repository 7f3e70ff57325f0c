import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a notification says about what it is and whom it suits, beyond its payload: its
/// category (preferences and frequency caps go by it), a template rendered per device, and a
/// digest that folds a burst into one push per user.
public struct NotificationContent: Sendable, Hashable {
    /// One of the app's categories (`orders`, `marketing`); `nil`: none (nothing is screened).
    public var category: String?
    /// Passes the category's frequency caps (a security alert in a commercial category).
    public var critical: Bool
    /// The template the notification is rendered from, as it was when the notification was
    /// queued: editing the template later never changes what this notification's retries send.
    public var template: TemplateUse?
    /// Folds this notification, per user, into one push per key and window.
    public var digest: DigestRequest?

    public init(category: String? = nil, critical: Bool = false, template: TemplateUse? = nil, digest: DigestRequest? = nil) {
        self.category = category
        self.critical = critical
        self.template = template
        self.digest = digest
    }

    /// Whether it asks for nothing: no column is written for it.
    var isEmpty: Bool { category == nil && !critical && template == nil && digest == nil }
}

/// A notification's use of a stored template (``StoredTemplate``), kept with the notification.
public struct TemplateUse: Sendable, Hashable {
    public var name: String
    /// The template's version when the notification was queued.
    public var version: Int
    /// The template itself (the gateway's JSON), as it was then.
    public var body: [UInt8]
    /// The variables every device is rendered with, a JSON object; `nil`: none.
    public var data: [UInt8]?
    /// Variables per user over ``data``, a JSON object from user ID to object; `nil`: none.
    public var dataByUser: [UInt8]?

    public init(name: String, version: Int, body: [UInt8], data: [UInt8]? = nil, dataByUser: [UInt8]? = nil) {
        self.name = name
        self.version = version
        self.body = body
        self.data = data
        self.dataByUser = dataByUser
    }
}

/// A notification's digest: within `windowSeconds` of the first notification of a user and key,
/// the later ones are folded into it (outcome ``SkipReason/digested``), and it is sent when the
/// window ends, with how many there were and their items.
public struct DigestRequest: Sendable, Hashable {
    /// What folds together, per user (`comments:post-42`): also the push's collapse ID, tag and
    /// Web Push topic, so a later digest replaces an earlier one on the device.
    public var key: String
    public var windowSeconds: Int
    /// This notification's line in the digest's items (`Ann: nice photo`); `nil`: none.
    public var item: String?

    /// The longest key, and the longest item.
    public static let maximumKeyLength = 128
    public static let maximumItemLength = 256
    /// The longest window: a day.
    public static let maximumWindowSeconds = 86_400
    /// The latest items a digest keeps.
    public static let maximumItems = 10

    public init(key: String, windowSeconds: Int, item: String? = nil) {
        self.key = key
        self.windowSeconds = windowSeconds
        self.item = item
    }
}

/// What a digest held when it was sent: how many notifications it folded (the first included)
/// and the latest of their items, oldest first.
public struct DigestSummary: Sendable, Hashable {
    public var count: Int
    public var items: [String]

    public init(count: Int, items: [String]) {
        self.count = count
        self.items = items
    }
}

/// Why a device was not sent a notification, without any fault: it ends with this outcome,
/// counted and listed, never sent.
public enum SkipReason: String, Sendable, Hashable, CaseIterable {
    /// The device or its user opted out of the notification's category (or never opted in to an
    /// opt-in one).
    case optedOut
    /// Its user (or the device, without one) had as many of the category's notifications as a
    /// frequency cap allows.
    case capped
    /// Folded into an earlier notification's digest for its user.
    case digested
}

/// At most `count` notifications of a category per user in any `windowSeconds`.
public struct FrequencyCap: Sendable, Hashable {
    public var count: Int
    public var windowSeconds: Int

    public init(count: Int, windowSeconds: Int) {
        self.count = count
        self.windowSeconds = windowSeconds
    }
}

/// How a batch's devices are screened for a notification's category.
public struct ScreeningRules: Sendable, Hashable {
    public var category: String
    /// Devices receive it unless they opted out (`true`), or only when they opted in (`false`).
    public var receivesByDefault: Bool
    /// Whether preferences count: a transactional category's notifications go to every device.
    public var honorsPreferences: Bool
    /// The caps that apply (none for a transactional category or a critical notification).
    public var caps: [FrequencyCap]

    public init(category: String, receivesByDefault: Bool, honorsPreferences: Bool, caps: [FrequencyCap]) {
        self.category = category
        self.receivesByDefault = receivesByDefault
        self.honorsPreferences = honorsPreferences
        self.caps = caps
    }
}

/// What a device of a batch is, as rendering needs it.
public struct DeviceTraits: Sendable, Hashable {
    public var user: String?
    public var locale: String?

    public init(user: String? = nil, locale: String? = nil) {
        self.user = user
        self.locale = locale
    }
}

/// A batch screened: each device's traits, the devices not to send, and the digests its users'
/// devices are sent (by user).
public struct Screening: Sendable {
    public var traits: [String: DeviceTraits] = [:]
    public var skipped: [String: SkipReason] = [:]
    public var digests: [String: DigestSummary] = [:]

    public init(traits: [String: DeviceTraits] = [:], skipped: [String: SkipReason] = [:], digests: [String: DigestSummary] = [:]) {
        self.traits = traits
        self.skipped = skipped
        self.digests = digests
    }
}

/// A template of an app, as stored: the gateway's JSON, and its version (1 when first stored,
/// one more each time it is replaced).
public struct StoredTemplate: Sendable, Hashable {
    public var app: String
    public var name: String
    public var version: Int
    public var body: [UInt8]
    public var updatedAt: Date

    /// The longest template name; names are 1 to 64 of `a-z A-Z 0-9 _ - .`.
    public static let maximumNameLength = 64

    public static func isValidName(_ name: String) -> Bool {
        let bytes = name.utf8
        return !bytes.isEmpty && bytes.count <= maximumNameLength && bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte == 0x2D
                || byte == 0x2E
        }
    }
}

/// A user's choices per category: for every platform, and per platform over that.
public struct UserPreferences: Sendable, Hashable {
    public struct Choice: Sendable, Hashable {
        /// For every platform; `nil`: the category's default.
        public var all: Bool?
        /// Per platform, over ``all``.
        public var platforms: [DevicePlatform: Bool]

        public init(all: Bool? = nil, platforms: [DevicePlatform: Bool] = [:]) {
            self.all = all
            self.platforms = platforms
        }
    }

    public var user: String
    public var categories: [String: Choice]
    public var updatedAt: Date?

    public init(user: String, categories: [String: Choice], updatedAt: Date? = nil) {
        self.user = user
        self.categories = categories
        self.updatedAt = updatedAt
    }
}
