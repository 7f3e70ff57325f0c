import Foundation
import HeraldCore
import Testing

@Suite("APNs errors")
struct APNSErrorTests {
    /// apns-spec §1.7: status, reason, and whether a retry of the same notification can succeed.
    static let table: [(Int, String, Bool)] = [
        (400, "BadCollapseId", false), (400, "BadDeviceToken", false), (400, "BadExpirationDate", false),
        (400, "BadMessageId", false), (400, "BadPriority", false), (400, "BadTopic", false),
        (400, "DeviceTokenNotForTopic", false), (400, "DuplicateHeaders", false), (400, "IdleTimeout", true),
        (400, "InvalidPushType", false), (400, "MissingDeviceToken", false), (400, "MissingTopic", false),
        (400, "PayloadEmpty", false), (400, "TopicDisallowed", false), (403, "BadCertificate", false),
        (403, "BadCertificateEnvironment", false), (403, "ExpiredProviderToken", true), (403, "Forbidden", false),
        (403, "InvalidProviderToken", false), (403, "MissingProviderToken", false),
        (403, "UnrelatedKeyIdInToken", true), (403, "BadEnvironmentKeyIdInToken", false), (404, "BadPath", false),
        (405, "MethodNotAllowed", false), (410, "ExpiredToken", false), (410, "Unregistered", false),
        (413, "PayloadTooLarge", false), (429, "TooManyProviderTokenUpdates", true), (429, "TooManyRequests", true),
        (500, "InternalServerError", true), (503, "ServiceUnavailable", true), (503, "Shutdown", true),
    ]

    /// apns-spec §1.9: the broadcast and channel reasons not already in §1.7.
    static let broadcast: [(Int, String)] = [
        (400, "FeatureNotEnabled"), (400, "MissingChannelId"), (400, "BadChannelId"), (400, "ChannelNotRegistered"),
        (400, "BadRequestParams"), (400, "BadRequestPayload"), (400, "MissingPushType"),
        (400, "CannotCreateChannelConfig"), (403, "TopicMismatch"),
    ]

    @Test("every reason of §1.7 parses from an APNs body with its status and retry rule")
    func everyReason() {
        for (status, name, retryable) in Self.table {
            let body = Array(#"{"reason":"\#(name)"}"#.utf8)
            let error = APNSError(status: status, responseBody: body, apnsID: "ABC")
            #expect(error.reason.rawValue == name)
            #expect(error.reason != .unknown(name), "\(name) should be a known reason")
            #expect(error.reason.status == status, "\(name)")
            #expect(error.status == status)
            #expect(error.isRetryable == retryable, "\(name)")
            #expect(error.apnsID == "abc")
            #expect(error.origin == .server)
        }
        #expect(APNSReason.allKnown.count == Self.table.count + Self.broadcast.count)
    }

    @Test("every broadcast reason of §1.9 parses")
    func broadcastReasons() {
        for (status, name) in Self.broadcast {
            let reason = APNSReason(rawValue: name)
            #expect(reason.rawValue == name)
            #expect(reason.status == status)
            #expect(!reason.isRetryable)
        }
        #expect(APNSReason(rawValue: "Service Unavailable") == .serviceUnavailable)
    }

    @Test("the 410 timestamp is milliseconds since the epoch")
    func unregisteredTimestamp() throws {
        let body = Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8)
        let error = APNSError(status: 410, responseBody: body)
        #expect(error.reason == .unregistered)
        let timestamp = try #require(error.timestamp)
        #expect(abs(timestamp.timeIntervalSince1970 - 1_700_000_000.123) < 0.0005)
        #expect(error.reason.invalidatesToken)
        #expect(error.retry == .never)
        #expect(error.description.contains("Unregistered (410)"))
        // Some gateways send it as a string.
        let stringly = APNSError(status: 410, responseBody: Array(#"{"reason":"Unregistered","timestamp":"1700000000000"}"#.utf8))
        #expect(stringly.timestamp == Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test("BadEnvironmentKeyInToken, seen on the wire, is the same reason (§8.2)")
    func environmentKeyAlias() {
        #expect(APNSReason(rawValue: "BadEnvironmentKeyInToken") == .badEnvironmentKeyIdInToken)
    }

    @Test("an unknown reason is kept, and retried by status")
    func unknownReason() {
        let error = APNSError(status: 400, responseBody: Array(#"{"reason":"BrandNewReason"}"#.utf8))
        #expect(error.reason == .unknown("BrandNewReason"))
        #expect(error.reason.rawValue == "BrandNewReason")
        #expect(!error.isRetryable)
        let serverError = APNSError(status: 502, responseBody: Array(#"{"reason":"Gateway"}"#.utf8))
        #expect(serverError.retry == .withBackoff)
    }

    @Test("a body without JSON still gives an error with the reason its status implies")
    func unparsableBody() {
        let error = APNSError(status: 503, responseBody: Array("<html>busy</html>".utf8))
        #expect(error.reason == .serviceUnavailable)
        #expect(error.isRetryable)
        #expect(error.detail == "response body has no reason")
        let empty = APNSError(status: 418, responseBody: [UInt8]())
        #expect(empty.reason == .unknown(""))
        #expect(empty.detail == "empty response body")
    }

    @Test("retry advice follows §1.7")
    func retryAdvice() {
        #expect(APNSReason.expiredProviderToken.retry == .withNewProviderToken)
        #expect(APNSReason.tooManyProviderTokenUpdates.retry == .withCachedProviderTokenAfterDelay)
        #expect(APNSReason.shutdown.retry == .onNewConnection)
        #expect(APNSReason.tooManyRequests.retry == .afterDelay)
        #expect(APNSReason.internalServerError.retry == .withBackoff)
        #expect(APNSReason.badTopic.retry == .afterFix)
        #expect(APNSReason.badDeviceToken.retry == .never)
    }
}
