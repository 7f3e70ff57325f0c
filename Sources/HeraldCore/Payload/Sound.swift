/// The `aps.sound` value: a sound file name, or the critical-alert dictionary (apns-spec §3.1).
public enum Sound: Sendable, Hashable {
    /// A sound file in the app bundle or `Library/Sounds`; `"default"` is the system sound.
    case named(String)
    /// A critical alert sound: `{"critical": 1, "name": …, "volume": …}`.
    case critical(CriticalSound)

    /// The system sound.
    public static let `default` = Sound.named("default")
}

extension Sound: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .named(value) }
}

/// The dictionary form of `sound`, for critical alerts.
public struct CriticalSound: Sendable, Hashable {
    /// `critical`: `true` writes `1` and plays the sound as a critical alert.
    public var critical: Bool
    /// `name`: a sound file, or `"default"`.
    public var name: String
    /// `volume`, from 0.0 (silent) to 1.0 (full); `nil` leaves it to the system.
    public var volume: Double?

    public init(name: String = "default", volume: Double? = nil, critical: Bool = true) {
        self.critical = critical
        self.name = name
        self.volume = volume
    }
}
