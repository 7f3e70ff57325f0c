/// A reason string from an APNs error response (apns-spec §1.7, and the broadcast and channel
/// reasons of §1.9), with ``unknown(_:)`` for reasons Apple adds later.
///
/// Local validation uses the same reasons, so a notification Herald refuses before sending carries
/// the reason APNs would have given.
public enum APNSReason: Sendable, Hashable, CustomStringConvertible {
    // 400
    case badCollapseId
    case badDeviceToken
    case badExpirationDate
    case badMessageId
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    // 403
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIdInToken
    /// Apple documents `BadEnvironmentKeyIdInToken`; `BadEnvironmentKeyInToken` is seen on the wire.
    /// Both parse to this case (apns-spec §8.2).
    case badEnvironmentKeyIdInToken
    // 404, 405
    case badPath
    case methodNotAllowed
    // 410
    case expiredToken
    case unregistered
    // 413
    case payloadTooLarge
    // 429
    case tooManyProviderTokenUpdates
    case tooManyRequests
    // 500, 503
    case internalServerError
    case serviceUnavailable
    case shutdown
    // Broadcast and channel management (§1.9)
    case featureNotEnabled
    case missingChannelId
    case badChannelId
    case channelNotRegistered
    case badRequestParams
    case badRequestPayload
    case missingPushType
    case cannotCreateChannelConfig
    case topicMismatch
    /// A reason this version of Herald does not know.
    case unknown(String)

    /// Every known reason, in the order of the reference tables.
    public static let allKnown: [APNSReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment,
        .expiredProviderToken, .forbidden, .invalidProviderToken, .missingProviderToken,
        .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badPath, .methodNotAllowed, .expiredToken,
        .unregistered, .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests,
        .internalServerError, .serviceUnavailable, .shutdown, .featureNotEnabled, .missingChannelId,
        .badChannelId, .channelNotRegistered, .badRequestParams, .badRequestPayload, .missingPushType,
        .cannotCreateChannelConfig, .topicMismatch,
    ]

    private static let byName: [String: APNSReason] = {
        var map = Dictionary(uniqueKeysWithValues: allKnown.map { ($0.rawValue, $0) })
        map["BadEnvironmentKeyInToken"] = .badEnvironmentKeyIdInToken
        map["Service Unavailable"] = .serviceUnavailable  // how Apple's broadcast table prints it (§1.9)
        return map
    }()

    /// The reason for a string as APNs sends it; never fails (``unknown(_:)`` for new strings).
    public init(rawValue: String) {
        self = Self.byName[rawValue] ?? .unknown(rawValue)
    }

    /// The string as APNs sends it.
    public var rawValue: String {
        switch self {
        case .badCollapseId: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageId: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .unrelatedKeyIdInToken: "UnrelatedKeyIdInToken"
        case .badEnvironmentKeyIdInToken: "BadEnvironmentKeyIdInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .expiredToken: "ExpiredToken"
        case .unregistered: "Unregistered"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .featureNotEnabled: "FeatureNotEnabled"
        case .missingChannelId: "MissingChannelId"
        case .badChannelId: "BadChannelId"
        case .channelNotRegistered: "ChannelNotRegistered"
        case .badRequestParams: "BadRequestParams"
        case .badRequestPayload: "BadRequestPayload"
        case .missingPushType: "MissingPushType"
        case .cannotCreateChannelConfig: "CannotCreateChannelConfig"
        case .topicMismatch: "TopicMismatch"
        case .unknown(let raw): raw
        }
    }

    /// The HTTP status APNs answers with for this reason (§1.7, §1.9); `nil` for unknown reasons.
    public var status: Int? {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic, .payloadEmpty, .topicDisallowed, .featureNotEnabled, .missingChannelId,
            .badChannelId, .channelNotRegistered, .badRequestParams, .badRequestPayload, .missingPushType,
            .cannotCreateChannelConfig:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden,
            .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken,
            .topicMismatch:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        case .unknown: nil
        }
    }

    /// What a sender should do after this reason, following the "Retry?" column of §1.7.
    public var retry: RetryAdvice {
        switch self {
        case .badDeviceToken, .deviceTokenNotForTopic, .forbidden, .expiredToken, .unregistered, .payloadTooLarge:
            .never
        case .tooManyRequests: .afterDelay
        case .internalServerError, .serviceUnavailable: .withBackoff
        case .shutdown, .idleTimeout, .unrelatedKeyIdInToken: .onNewConnection
        case .expiredProviderToken: .withNewProviderToken
        case .tooManyProviderTokenUpdates: .withCachedProviderTokenAfterDelay
        case .unknown: .afterFix
        default: .afterFix
        }
    }

    /// Whether sending the same notification again, unchanged, can succeed (§1.7's "Retry?" column).
    public var isRetryable: Bool { retry.isRetryable }

    /// Whether the device token should be dropped (or, for 410, kept only if re-registered later).
    public var invalidatesToken: Bool {
        switch self {
        case .badDeviceToken, .expiredToken, .unregistered: true
        default: false
        }
    }

    public var description: String { rawValue }
}

/// What to do after a rejection, per apns-spec §1.7.
public enum RetryAdvice: Sendable, Hashable {
    /// Final: do not send this notification again (drop the token where the reason says so).
    case never
    /// The request itself is wrong; sending it unchanged fails again.
    case afterFix
    /// Retry after a delay (`TooManyRequests`).
    case afterDelay
    /// Retry with exponential back-off (500, 503).
    case withBackoff
    /// Retry on a fresh connection (`Shutdown`, `IdleTimeout`, `UnrelatedKeyIdInToken`).
    case onNewConnection
    /// Mint a new provider token, then retry once (`ExpiredProviderToken`).
    case withNewProviderToken
    /// Retry with the cached provider token after a delay (`TooManyProviderTokenUpdates`).
    case withCachedProviderTokenAfterDelay

    /// Whether a retry of the unchanged notification can succeed.
    public var isRetryable: Bool {
        switch self {
        case .never, .afterFix: false
        default: true
        }
    }
}

extension APNSReason {
    /// What the rejection does to the device (apns-spec §1.7): `Unregistered` and `ExpiredToken`
    /// retire it as of APNs's timestamp, unless it registered again since; `BadDeviceToken` and
    /// `DeviceTokenNotForTopic` mark it invalid at once.
    public var deviceFate: DeliveryReason.DeviceFate? {
        switch self {
        case .unregistered, .expiredToken: .unregistered
        case .badDeviceToken, .deviceTokenNotForTopic: .invalid
        default: nil
        }
    }
}
