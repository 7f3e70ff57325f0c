/// The `apns-push-type` header: what kind of notification this is (apns-spec §1.5).
public enum PushType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case alert
    case background
    case location
    case voip
    case complication
    case fileprovider
    case mdm
    case liveactivity
    case pushtotalk
    case widgets
    case controls

    /// The suffix the topic needs after the bundle ID (§1.5); `nil` for `mdm`, whose topic is the
    /// MDM push certificate's subject UID.
    public var topicSuffix: String? {
        switch self {
        case .alert, .background: ""
        case .location: ".location-query"
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .mdm: nil
        case .liveactivity: ".push-type.liveactivity"
        case .pushtotalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        }
    }

    /// The largest payload APNs accepts for this type: 5120 bytes for VoIP, 4096 otherwise (§1.8).
    public var maximumPayloadSize: Int {
        self == .voip ? 5120 : 4096
    }

    /// The topic for an app's bundle ID: the bundle ID plus this type's suffix.
    public func topic(forBundleID bundleID: String) -> String {
        bundleID + (topicSuffix ?? "")
    }

    /// Checks that `topic` fits this push type, e.g. `com.example.app.voip` for `voip`.
    ///
    /// Alert and background topics are refused when they end in a suffix no bundle ID would carry
    /// (`.push-type.…`, `.pushkit.fileprovider`, `.location-query`, `.voip-ptt`). `.voip` and
    /// `.complication` can be the last part of a real bundle ID, so they are let through.
    public func validate(topic: String) throws(APNSError) {
        guard !topic.isEmpty else {
            throw APNSError(local: .missingTopic, "apns-topic is empty")
        }
        guard let suffix = topicSuffix else { return }
        if suffix.isEmpty {
            if let other = Self.unmistakableSuffixes.first(where: { topic.hasUTF8Suffix($0.suffix) }) {
                throw APNSError(
                    local: .badTopic,
                    "topic '\(topic)' ends in '\(other.suffix)', the suffix for push type \(other.type); use push type \(other.type), or the bare bundle ID for \(self)"
                )
            }
            return
        }
        guard topic.hasUTF8Suffix(suffix), topic.utf8.count > suffix.utf8.count else {
            throw APNSError(
                local: .badTopic,
                "push type \(self) needs a topic ending in '\(suffix)' (the bundle ID plus '\(suffix)'), got '\(topic)'"
            )
        }
    }

    private static let unmistakableSuffixes: [(suffix: String, type: PushType)] = [
        (".location-query", .location), (".pushkit.fileprovider", .fileprovider),
        (".push-type.liveactivity", .liveactivity), (".voip-ptt", .pushtotalk),
        (".push-type.widgets", .widgets), (".push-type.controls", .controls),
    ]

    public var description: String { rawValue }
}
