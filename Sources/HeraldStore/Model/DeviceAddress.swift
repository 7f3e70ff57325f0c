/// What reaches a device that is not an APNs token, as the store keeps it: its platform and the
/// text that platform reads (a browser's subscription as JSON, an FCM registration token). Each
/// platform's address type (``PlatformAddress``) writes and reads that text; the store keeps it
/// as it came, in one column whatever the platform, so a platform more needs no column of its own.
public struct DeviceAddress: Sendable, Hashable {
    public let platform: DevicePlatform
    /// The platform's form of the address. Holds secrets for some (a Web Push subscription's
    /// `auth`): never logged.
    public let stored: String

    /// The longest stored form kept, in bytes (a Web Push subscription's is at most about 2.3 KiB).
    public static let maximumLength = 8192

    /// - Throws: ``StoreError`` `invalidInput` for an empty or too long form.
    public init(platform: DevicePlatform, stored: String) throws(StoreError) {
        guard !stored.isEmpty, stored.utf8.count <= Self.maximumLength else {
            throw StoreError(.invalidInput, "address: 1 to \(Self.maximumLength) bytes (got \(stored.utf8.count))")
        }
        self.platform = platform
        self.stored = stored
    }
}

extension DeviceAddress: CustomStringConvertible {
    /// The platform only: an address may be a capability, or hold a secret.
    public var description: String { "DeviceAddress(\(platform))" }
}

/// One platform's address type: how it is stored (``DeviceAddress``) and the device ID it is
/// registered under.
public protocol PlatformAddress: Sendable, Hashable {
    /// The platform it reaches.
    static var platform: DevicePlatform { get }
    /// The device ID it is registered under: the same address registered again is the same device.
    var id: String { get }
    /// Its stored form.
    var stored: String { get }
    /// From its stored form; `nil` for anything else.
    init?(stored: String)
}

extension PlatformAddress {
    /// As the store keeps it.
    public var address: DeviceAddress {
        // A platform's own forms are bounded far below the store's bound.
        (try? DeviceAddress(platform: Self.platform, stored: stored)) ?? DeviceAddress(unchecked: Self.platform, stored: stored)
    }

    /// `address` read as this platform's, or `nil` when it is another platform's (or unreadable).
    public init?(_ address: DeviceAddress?) {
        guard let address, address.platform == Self.platform else { return nil }
        self.init(stored: address.stored)
    }
}

extension DeviceAddress {
    /// A form read from the store, or made by a platform's address type: not checked again.
    init(unchecked platform: DevicePlatform, stored: String) {
        self.platform = platform
        self.stored = stored
    }
}
