import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether notifications go to a device.
public enum DeviceStatus: String, Sendable, Hashable, CaseIterable {
    /// Registered, and not reported gone: notifications go to it.
    case active
    /// APNs said the app is no longer installed (410 `Unregistered`, or the feedback service) at
    /// a time after the device last registered.
    case unregistered
    /// APNs refused the token itself (`BadDeviceToken`, `DeviceTokenNotForTopic`).
    case invalid
}

/// A device token registered with an app: its user, tags and badge, and whether notifications
/// still go to it.
public struct Device: Sendable, Hashable {
    /// The app (a gateway's app ID, not a bundle ID).
    public var app: String
    /// The device token, lower-case hex.
    public var token: String
    public var user: String?
    public var tags: Set<String>
    /// The badge count, set when the app says so and raised by notifications that increment it.
    public var badge: Int
    public var status: DeviceStatus
    /// Why the device is not active: the APNs reason.
    public var reason: String?
    /// For ``DeviceStatus/unregistered``: when APNs saw the token go (its 410 timestamp).
    public var invalidatedAt: Date?
    public var createdAt: Date
    /// Every registration sets it; APNs's timestamp rule compares against it.
    public var updatedAt: Date
    /// Which of the app's tokens this is: which push types reach it.
    public var kind: TokenKind
    /// For a ``TokenKind/liveactivity`` (push-to-start) token: the Live Activity's attributes type.
    public var activityType: String?
    /// The environment its token belongs to; `nil`: the app's.
    public var environment: TokenEnvironment?
    /// What reaches it when it is not an APNs token (a browser's subscription, an Android
    /// device's registration token); then ``token`` is the address's ID.
    public var address: DeviceAddress?
    /// For a browser: its Web Push subscription.
    public var webPush: WebPushAddress? { WebPushAddress(address) }
    /// For an Android device: its FCM registration token.
    public var fcm: FCMAddress? { FCMAddress(address) }

    /// Its IANA time zone (`Europe/Paris`): local-time sends and quiet hours go by it; `nil`:
    /// its app's default.
    public var timeZone: String?
    /// Its language (a BCP 47 tag, `pt-BR`): a template's variant is chosen by it; `nil`: its
    /// app's default language.
    public var locale: String?
    /// The device's own choices per category (`marketing`: `false` opts out), over its user's
    /// (``UserPreferences``).
    public var preferences: [String: Bool] = [:]

    /// Which push service reaches it.
    public var platform: DevicePlatform { address?.platform ?? .apns }

    public init(
        app: String, token: String, user: String? = nil, tags: Set<String> = [], badge: Int = 0, status: DeviceStatus = .active,
        reason: String? = nil, invalidatedAt: Date? = nil, createdAt: Date, updatedAt: Date, kind: TokenKind = .alert, activityType: String? = nil,
        environment: TokenEnvironment? = nil, webPush: WebPushAddress? = nil, fcm: FCMAddress? = nil, address: DeviceAddress? = nil,
        timeZone: String? = nil, locale: String? = nil, preferences: [String: Bool] = [:]
    ) {
        self.timeZone = timeZone
        self.locale = locale
        self.preferences = preferences
        self.environment = environment
        self.address = address ?? webPush?.address ?? fcm?.address
        self.app = app
        self.token = token
        self.kind = kind
        self.activityType = activityType
        self.user = user
        self.tags = tags
        self.badge = badge
        self.status = status
        self.reason = reason
        self.invalidatedAt = invalidatedAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A device registering (or registering again): what it says about itself. Fields left `nil` keep
/// their stored value; registering makes the device active again.
public struct DeviceRegistration: Sendable, Hashable {
    /// The device token, lower-case hex (checked by ``init(token:user:tags:badge:)``).
    public private(set) var token: String
    /// `nil` keeps the stored user; `.some(nil)` clears it (checked by ``init(token:user:tags:badge:)``,
    /// and read-only after it, so no check can be bypassed).
    public private(set) var user: String??
    /// `nil` keeps the stored tags (checked by ``init(token:user:tags:badge:)``).
    public private(set) var tags: Set<String>?
    /// `nil` keeps the stored badge (checked by ``init(token:user:tags:badge:)``, and again by the
    /// store when registered, so it may be changed).
    public var badge: Int?
    /// `nil` keeps the stored kind (a new device: ``TokenKind/alert``); a kind given replaces it
    /// and its activity type.
    public private(set) var kind: TokenKind?
    /// The attributes type of a ``TokenKind/liveactivity`` token's Live Activity: required with
    /// that kind, refused with any other.
    public private(set) var activityType: String?
    /// The environment the token belongs to: `nil` keeps the stored one (a new device: the app's).
    public var environment: TokenEnvironment?
    /// What reaches it when it is not an APNs token (``init(address:user:tags:badge:)``): replaces the stored one.
    public private(set) var address: DeviceAddress?
    /// A browser's subscription (``init(webPush:user:tags:badge:)``).
    public var webPush: WebPushAddress? { WebPushAddress(address) }
    /// An Android device's registration token (``init(fcm:user:tags:badge:)``).
    public var fcm: FCMAddress? { FCMAddress(address) }
    /// Its IANA time zone (``setTimeZone(_:)``): `nil` keeps the stored one.
    public private(set) var timeZone: String?

    /// Sets the device's time zone, an IANA name (`America/New_York`, `UTC`).
    ///
    /// - Throws: ``StoreError`` with code `invalidInput` for a name the time zone database does not know.
    public mutating func setTimeZone(_ name: String?) throws(StoreError) {
        if let name, !DeliverySchedule.isTimeZone(name) {
            throw StoreError(
                .invalidInput, "timeZone: \(String(reflecting: PeerText(name, limit: 64).description)) is not a time zone of the IANA database (e.g. Europe/Paris, America/New_York, UTC)"
            )
        }
        timeZone = name
    }

    /// Its language (``setLocale(_:)``): `nil` keeps the stored one, `""` clears it.
    public private(set) var locale: String?
    /// The device's own choices per category (``setPreferences(_:)``): `nil` keeps the stored
    /// ones; an empty dictionary clears them.
    public private(set) var preferences: [String: Bool]?

    /// Sets the device's language, a BCP 47 tag as the device reports it (`pt-BR`, `pt_BR`,
    /// `zh-Hant-TW`); `""` clears it.
    ///
    /// - Throws: ``StoreError`` with code `invalidInput` for text that is no language tag.
    public mutating func setLocale(_ tag: String?) throws(StoreError) {
        if let tag, !tag.isEmpty, !Self.isLocale(tag) {
            throw StoreError(
                .invalidInput,
                "locale: \(String(reflecting: PeerText(tag, limit: 64).description)) is not a BCP 47 language tag (e.g. en, pt-BR, zh-Hant-TW), at most \(Self.maximumLocaleLength) bytes"
            )
        }
        locale = tag
    }

    /// Sets the device's own choices per category (`["marketing": false]`); an empty dictionary clears them.
    ///
    /// - Throws: ``StoreError`` with code `invalidInput` for more than ``maximumPreferences`` or a
    ///   name that is not a category's (``isCategoryName(_:)``).
    public mutating func setPreferences(_ choices: [String: Bool]?) throws(StoreError) {
        if let choices {
            guard choices.count <= Self.maximumPreferences else { throw StoreError(.invalidInput, "preferences: at most \(Self.maximumPreferences) categories") }
            for name in choices.keys where !Self.isCategoryName(name) {
                throw StoreError(.invalidInput, "preferences: \(String(reflecting: PeerText(name, limit: 80).description)) is not a category name (1 to 64 of a-z 0-9 _ -)")
            }
        }
        preferences = choices
    }

    /// The longest locale a device may register.
    public static let maximumLocaleLength = 35
    /// The most categories a device or user may have a choice for.
    public static let maximumPreferences = 64

    /// Whether `tag` is shaped as a BCP 47 language tag: subtags of 1 to 8 ASCII letters or
    /// digits joined by `-` (or `_`, as Android and Apple report them), the first 2 to 3 letters.
    public static func isLocale(_ tag: String) -> Bool {
        guard !tag.isEmpty, tag.utf8.count <= maximumLocaleLength else { return false }
        for (index, part) in tag.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
            .flatMap({ $0.split(separator: UInt8(ascii: "_"), omittingEmptySubsequences: false) }).enumerated()
        {
            guard (1...8).contains(part.count), part.allSatisfy({ isLetter($0) || (index > 0 && $0 >= 0x30 && $0 <= 0x39) }) else { return false }
            if index == 0, !(2...3).contains(part.count) { return false }
        }
        return true
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) }

    /// A category's name: 1 to 64 of `a-z`, `0-9`, `_` and `-`.
    public static func isCategoryName(_ name: String) -> Bool {
        let bytes = name.utf8
        return !bytes.isEmpty && bytes.count <= 64 && bytes.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F || $0 == 0x2D }
    }

    /// The most tags a device may have, and their longest length.
    public static let maximumTags = 32
    public static let maximumTagLength = 64
    /// The longest user ID.
    public static let maximumUserLength = 256

    /// Whether `user` may name a user: 1 to ``maximumUserLength`` bytes without control
    /// characters (it is a SQL parameter and may reach a log or the console).
    public static func isValidUser(_ user: some StringProtocol) -> Bool {
        !user.isEmpty && user.utf8.count <= maximumUserLength && PeerText.isSafe(user)
    }
    /// The longest Live Activity attributes type name.
    public static let maximumActivityTypeLength = 128
    /// The largest badge APNs accepts (`aps.badge` is a 32-bit signed number); increments stop here.
    public static let maximumBadge = Int(Int32.max)

    /// - Parameters:
    ///   - user: `nil` keeps the stored user; `.some(nil)` clears it.
    /// - Throws: ``StoreError`` with code `invalidInput`, saying what is wrong.
    public init(
        token: String, user: String?? = nil, tags: Set<String>? = nil, badge: Int? = nil, kind: TokenKind? = nil, activityType: String? = nil,
        environment: TokenEnvironment? = nil
    ) throws(StoreError) {
        self.environment = environment
        if WebPushAddress.isID(token) {
            // A subscription is registered with its endpoint and keys, never by its ID alone.
            throw StoreError(.invalidInput, "device token: \(token) is a Web Push subscription's ID; register the subscription itself (its endpoint and keys)")
        }
        if FCMAddress.isID(token) {
            throw StoreError(.invalidInput, "device token: \(token) is an Android device's ID; register its FCM registration token (with platform fcm)")
        }
        do {
            self.token = try DeviceToken(token).hex
        } catch {
            throw StoreError(.invalidInput, "device token: \(error.detail ?? error.description)")
        }
        if case .some(.some(let user)) = user {
            guard Self.isValidUser(user) else {
                throw StoreError(.invalidInput, "user: must be 1 to \(Self.maximumUserLength) bytes without control characters")
            }
        }
        if let tags {
            guard tags.count <= Self.maximumTags else { throw StoreError(.invalidInput, "tags: at most \(Self.maximumTags)") }
            for tag in tags where !Self.isValidTag(tag) {
                throw StoreError(.invalidInput, "tags: \(String(reflecting: PeerText(tag, limit: 80).description)) must be 1 to \(Self.maximumTagLength) of A-Z a-z 0-9 . _ : -")
            }
        }
        if kind == .liveactivity {
            // The type name is an identifier in the app's Swift code (`ActivityAttributes`).
            guard let activityType, Self.isValidActivityType(activityType) else {
                throw StoreError(
                    .invalidInput,
                    "activityType: a liveactivity token needs its Live Activity's attributes type, 1 to \(Self.maximumActivityTypeLength) of A-Z a-z 0-9 _ ."
                )
            }
        } else if activityType != nil {
            throw StoreError(.invalidInput, "activityType: only a liveactivity token has one (kind is \(kind.map(\.rawValue) ?? "not given"))")
        }
        self.user = user
        self.tags = tags
        self.badge = badge
        self.kind = kind
        self.activityType = activityType
        try checkBadge()
    }

    /// A device reached through another platform than APNs, under its address's ID: an alert
    /// device (what `alert` notifications reach), in no APNs environment.
    public init(address: some PlatformAddress, user: String?? = nil, tags: Set<String>? = nil, badge: Int? = nil) throws(StoreError) {
        try self.init(token: String(repeating: "0", count: 64), user: user, tags: tags, badge: badge, kind: .alert)
        self.token = address.id
        self.address = address.address
    }

    /// A browser's Web Push subscription, under the subscription's ID.
    public init(webPush: WebPushAddress, user: String?? = nil, tags: Set<String>? = nil, badge: Int? = nil) throws(StoreError) {
        try self.init(address: webPush, user: user, tags: tags, badge: badge)
    }

    /// An Android device's FCM registration token, under the token's ID.
    public init(fcm: FCMAddress, user: String?? = nil, tags: Set<String>? = nil, badge: Int? = nil) throws(StoreError) {
        try self.init(address: fcm, user: user, tags: tags, badge: badge)
    }

    /// Whether it says nothing but its token: registering it keeps every stored field.
    var isBare: Bool {
        user == nil && tags == nil && badge == nil && kind == nil && environment == nil && address == nil && timeZone == nil && locale == nil && preferences == nil
    }

    /// A Live Activity attributes type name: 1 to 128 of letters, digits, `_` and `.`.
    public static func isValidActivityType(_ name: String) -> Bool {
        let bytes = name.utf8
        return !bytes.isEmpty && bytes.count <= maximumActivityTypeLength && bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte == 0x2E
        }
    }

    /// Throws unless the badge is `nil` or one APNs accepts: ``badge`` is a `var`, so the store
    /// checks it again when it registers the device.
    func checkBadge() throws(StoreError) {
        if let badge, badge < 0 || badge > Self.maximumBadge {
            throw StoreError(.invalidInput, "badge: must be 0 to \(Self.maximumBadge), got \(badge)")
        }
    }

    /// Takes the fields `later` sets (a later registration of the same token).
    mutating func merge(_ later: DeviceRegistration) {
        if let user = later.user { self.user = user }
        if let tags = later.tags { self.tags = tags }
        if let badge = later.badge { self.badge = badge }
        if let environment = later.environment { self.environment = environment }
        if let address = later.address { self.address = address }
        if let timeZone = later.timeZone { self.timeZone = timeZone }
        if let locale = later.locale { self.locale = locale }
        if let preferences = later.preferences { self.preferences = preferences }
        if let kind = later.kind {
            self.kind = kind
            self.activityType = later.activityType
        }
    }

    /// A tag: 1 to 64 characters of letters, digits, `.`, `_`, `:` and `-`.
    public static func isValidTag(_ tag: String) -> Bool {
        let bytes = tag.utf8
        return !bytes.isEmpty && bytes.count <= maximumTagLength && bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2E || byte == 0x5F || byte == 0x3A || byte == 0x2D
        }
    }
}

/// Which devices to list.
public struct DeviceFilter: Sendable, Hashable {
    public var status: DeviceStatus?
    public var user: String?
    public var tag: String?
    public var kind: TokenKind?
    /// Devices reached through this push service.
    public var platform: DevicePlatform?
    /// Devices of this environment; those registered without one count as `defaultEnvironment`'s.
    public var environment: TokenEnvironment?
    /// The app's environment: where a device registered without one is sent.
    public var defaultEnvironment: TokenEnvironment

    public init(
        status: DeviceStatus? = nil, user: String? = nil, tag: String? = nil, kind: TokenKind? = nil, environment: TokenEnvironment? = nil,
        defaultEnvironment: TokenEnvironment = .production, platform: DevicePlatform? = nil
    ) {
        self.platform = platform
        self.status = status
        self.user = user
        self.tag = tag
        self.kind = kind
        self.environment = environment
        self.defaultEnvironment = defaultEnvironment
    }
}

/// One page of a listing, and where the next one starts (`nil` after the last page).
public struct Page<Element: Sendable>: Sendable {
    public var items: [Element]
    public var next: String?

    public init(items: [Element], next: String?) {
        self.items = items
        self.next = next
    }
}
