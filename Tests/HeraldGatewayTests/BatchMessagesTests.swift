import Foundation
import HeraldAPNS
import HeraldCore
import Testing

@testable import HeraldGateway
@testable import HeraldStore

/// The worker's requests for a claimed batch, and how each APNs outcome is recorded, as plain values.
@Suite("Batch messages")
struct BatchMessagesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    // MARK: Outcomes

    enum Fate: Sendable {
        /// Retried with back-off until the notification's deadline.
        case retry
        /// Rejected, and the device retired unless it registers again (410).
        case retire
        /// Rejected, and the device invalid at once.
        case invalidate
        /// Rejected for this notification only.
        case reject
    }

    /// What becomes of a device when APNs answers with each reason (§1.7, §1.9): the gateway's
    /// credentials and APNs's own trouble are retried, never held against the device.
    static let fates: [(String, Fate)] = [
        ("BadCollapseId", .reject), ("BadDeviceToken", .invalidate), ("BadExpirationDate", .reject), ("BadMessageId", .reject),
        ("BadPriority", .reject), ("BadTopic", .reject), ("DeviceTokenNotForTopic", .invalidate), ("DuplicateHeaders", .reject),
        ("IdleTimeout", .retry), ("InvalidPushType", .reject), ("MissingDeviceToken", .reject), ("MissingTopic", .reject),
        ("PayloadEmpty", .reject), ("TopicDisallowed", .reject), ("BadCertificate", .retry), ("BadCertificateEnvironment", .retry),
        ("ExpiredProviderToken", .retry), ("Forbidden", .reject), ("InvalidProviderToken", .retry), ("MissingProviderToken", .retry),
        ("UnrelatedKeyIdInToken", .retry), ("BadEnvironmentKeyIdInToken", .retry), ("BadPath", .reject), ("MethodNotAllowed", .reject),
        ("ExpiredToken", .retire), ("Unregistered", .retire), ("PayloadTooLarge", .reject), ("TooManyProviderTokenUpdates", .retry),
        ("TooManyRequests", .retry), ("InternalServerError", .retry), ("ServiceUnavailable", .retry), ("Shutdown", .retry),
        ("FeatureNotEnabled", .reject), ("MissingChannelId", .reject), ("BadChannelId", .reject), ("ChannelNotRegistered", .reject),
        ("BadRequestParams", .reject), ("BadRequestPayload", .reject), ("MissingPushType", .reject), ("CannotCreateChannelConfig", .reject),
        ("TopicMismatch", .reject),
    ]

    @Test("the table names every APNs reason Herald knows")
    func tableIsComplete() {
        #expect(Set(Self.fates.map(\.0)) == Set(APNSReason.allKnown.map(\.rawValue)))
    }

    @Test("each APNs rejection is recorded as a retry or a rejection, and the queue then retries, retires, invalidates or rejects", arguments: Self.fates)
    func serverRejection(name: String, fate: Fate) {
        let reason = APNSReason(rawValue: name)
        let seen = Self.now.addingTimeInterval(-600)
        let error = APNSError(status: reason.status, reason: reason, timestamp: reason.status == 410 ? seen : nil, apnsID: "a1")
        let result = BatchMessages.outcome(.rejected(error))
        let decision = DeliveryDecision.decide(
            outcome: result, attempt: 1, deadline: Self.now.addingTimeInterval(3600), cancelled: false, now: Self.now,
            settings: RetrySettings(backoff: Backoff(initial: .seconds(5), maximum: .seconds(600))), random: 0
        )
        switch fate {
        case .retry:
            #expect(result == .retry(reason: .apns(reason)), "\(name)")
            #expect(decision == .retry(at: Self.now.addingTimeInterval(5), reason: .apns(reason)))
        case .retire:
            #expect(result == .rejected(reason: .apns(reason), timestamp: seen), "\(name)")
            #expect(decision == .retireDevice(reason: .apns(reason), since: seen))
        case .invalidate:
            #expect(result == .rejected(reason: .apns(reason), timestamp: nil), "\(name)")
            #expect(decision == .invalidateDevice(reason: .apns(reason)))
        case .reject:
            #expect(result == .rejected(reason: .apns(reason), timestamp: nil), "\(name)")
            #expect(decision == .reject(reason: .apns(reason)))
        }
        #expect(decision.reason?.description == name, "the stored string is APNs's")
    }

    @Test("a notification Herald's own validation refused fails, whatever the reason", arguments: APNSReason.allKnown)
    func localRejection(reason: APNSReason) {
        let result = BatchMessages.outcome(.rejected(APNSError(local: reason, "refused before sending")))
        #expect(result == .failed(reason: .apns(reason)))
    }

    @Test("a reason APNs adds later is retried for a 5xx or 429, rejected otherwise, and keeps its string")
    func unknownReason() {
        for status in [500, 503, 429] {
            let error = APNSError(status: status, responseBody: Array(#"{"reason":"BrandNew"}"#.utf8))
            #expect(BatchMessages.outcome(.rejected(error)) == .retry(reason: "BrandNew"), "\(status)")
        }
        for status in [400, 403, 410] {
            let error = APNSError(status: status, responseBody: Array(#"{"reason":"BrandNew"}"#.utf8))
            guard case .rejected(let reason, _) = BatchMessages.outcome(.rejected(error)) else {
                Issue.record("\(status) must reject")
                continue
            }
            #expect(reason.description == "BrandNew")
            #expect(reason == .other("BrandNew"))
        }
        // A body without a reason: the status's reason where there is one, else the empty string.
        #expect(BatchMessages.outcome(.rejected(APNSError(status: 503, responseBody: []))) == .retry(reason: "ServiceUnavailable"))
        #expect(BatchMessages.outcome(.rejected(APNSError(status: 400, responseBody: []))) == .rejected(reason: "", timestamp: nil))
    }

    /// Every `APNSClientError` code, and the string the store has always kept for it.
    static let clientCodes: [(APNSClientError.Code, String)] = [
        (.connectionFailed, "connectionFailed"), (.tlsFailed, "tlsFailed"), (.connectionLost, "connectionLost"), (.timedOut, "timedOut"),
        (.shutdown, "shutdown"), (.invalidCredentials, "invalidCredentials"), (.invalidConfiguration, "invalidConfiguration"),
        (.protocolError, "protocolError"),
    ]

    @Test("a client that gave up is retried under its code's name, a gateway reason of its own")
    func clientFailure() {
        for (code, name) in Self.clientCodes {
            let result = BatchMessages.outcome(.failed(APNSClientError(code, "gave up")))
            #expect(result == .retry(reason: DeliveryReason(name)))
            guard case .retry(let reason, _) = result, case .gateway = reason else {
                Issue.record("\(name) must be a gateway reason, not \(result)")
                continue
            }
            #expect(reason.description == name)
        }
        // Past its apns-expiration the notification fails; retrying cannot deliver it.
        #expect(BatchMessages.outcome(.failed(APNSClientError(.expired, "too late"))) == .failed(reason: .gateway(.expired)))
        #expect(BatchMessages.reason(.expired) == .gateway(.clientExpired))
    }

    @Test("an acceptance keeps APNs's apns-id when its batch's rows keep it, and only then")
    func accepted() {
        #expect(BatchMessages.outcome(.accepted(APNSResponse(apnsID: "0a1b"))) == .accepted(receipt: "0a1b"))
        #expect(BatchMessages.outcome(.accepted(APNSResponse(apnsID: "0a1b")), keepingID: true) == .accepted(receipt: "0a1b"))
        #expect(BatchMessages.outcome(.accepted(APNSResponse(apnsID: "0a1b")), keepingID: false) == .accepted(receipt: nil))
        // A rejection keeps what it says whatever the batch.
        let error = APNSError(status: 410, reason: .unregistered, timestamp: Self.now, apnsID: "a1")
        #expect(BatchMessages.outcome(.rejected(error), keepingID: false) == BatchMessages.outcome(.rejected(error)))
        // Single deliveries store each acceptance's ID; a broadcast's range counts them.
        var single = batch([(token(1), nil)])
        #expect(single.keepsAcceptanceIDs)
        single = WorkBatch(
            notification: single.notification, items: single.items, isResend: false, owner: "w",
            source: .segment(number: 0, after: .start, exhausted: true))
        #expect(!single.keepsAcceptanceIDs)
    }

    // MARK: Requests

    func batch(
        _ tokens: [(String, Int?)], payload: String = #"{"aps":{"alert":"hi"},"k":1}"#, pushType: PushType = .alert, collapseID: String? = nil,
        badge: BadgeMode = .none
    ) -> WorkBatch {
        WorkBatch(
            notification: QueuedNotification(
                id: "0190aaaa", app: appID, payload: Array(payload.utf8), pushType: pushType, priority: .throttled,
                expiration: try? PushExpiration(unixSeconds: 1_900_000_000), collapseID: collapseID, badge: badge,
                deadline: Self.now.addingTimeInterval(3600)
            ),
            items: tokens.enumerated().map { WorkItem(token: $1.0, badge: $1.1, attempt: 1) }, isResend: false, owner: "w",
            source: .deliveries(tokens.indices.map(Int64.init))
        )
    }

    @Test("one notification per device in the batch's order, with the notification's headers and its ID as the collapse ID")
    func notifications() throws {
        let messages = try BatchMessages.notifications(for: batch([(token(1), nil), (token(2), nil)]), topic: bundleID)
        #expect(messages.invalid.isEmpty)
        #expect(messages.notifications.map(\.token.hex) == [token(1), token(2)])
        for notification in messages.notifications {
            #expect(notification.headers.pushType == .alert)
            #expect(notification.headers.topic == bundleID)
            #expect(notification.headers.priority == .throttled)
            #expect(notification.headers.expiration == (try PushExpiration(unixSeconds: 1_900_000_000)))
            #expect(notification.headers.collapseID == "0190aaaa", "a resend after a lost lease collapses with the first send")
            #expect(notification.payload.string == #"{"aps":{"alert":"hi"},"k":1}"#, "the payload goes byte for byte")
        }
        let collapsed = try BatchMessages.notifications(for: batch([(token(1), nil)], collapseID: "mine"), topic: bundleID)
        #expect(collapsed.notifications.first?.headers.collapseID == "mine")
    }

    @Test("the topic follows the push type", arguments: [(PushType.alert, "com.example.shop"), (.voip, "com.example.shop.voip"), (.liveactivity, "com.example.shop.push-type.liveactivity")])
    func topic(pushType: PushType, topic: String) throws {
        let messages = try BatchMessages.notifications(for: batch([(token(1), nil)], pushType: pushType), topic: bundleID)
        #expect(messages.notifications.first?.headers.topic == topic)
    }

    @Test("a token that is not hex is left out and listed, the others keep their order")
    func invalidTokens() throws {
        let messages = try BatchMessages.notifications(for: batch([(token(1), nil), ("zz-not-hex", nil), (token(3), nil), ("abc", nil)]), topic: bundleID)
        #expect(messages.notifications.map(\.token.hex) == [token(1), token(3)])
        #expect(messages.invalid == ["zz-not-hex", "abc"])
    }

    @Test("a payload that is not a JSON object is refused for the whole batch", arguments: [#"[1,2]"#, "not json", ""])
    func invalidPayload(payload: String) {
        #expect(throws: PayloadError.self) {
            try BatchMessages.notifications(for: batch([(token(1), nil)], payload: payload), topic: bundleID)
        }
    }

    @Test("badge increments: each device gets its own aps.badge; without a badge, or without increments, the payload as stored")
    func badges() throws {
        let messages = try BatchMessages.notifications(
            for: batch([(token(1), 3), (token(2), 7), (token(3), 3), (token(4), nil)], badge: .increment), topic: bundleID
        )
        let badges = messages.notifications.map { $0.payload.json["aps"]?["badge"]?.intValue }
        #expect(badges == [3, 7, 3, nil])
        #expect(messages.notifications[0].payload == messages.notifications[2].payload)
        for notification in messages.notifications {
            #expect(notification.payload.json["aps"]?["alert"] == .string("hi"))
            #expect(notification.payload.json["k"] == .int(1))
        }
        #expect(messages.notifications[3].payload.string == #"{"aps":{"alert":"hi"},"k":1}"#)
        let plain = try BatchMessages.notifications(for: batch([(token(1), 3)], badge: .none), topic: bundleID)
        #expect(plain.notifications.first?.payload.json["aps"]?["badge"] == nil, "badges are sent only in increment mode")
    }

    @Test("a part of the batch's notifications: those at its indices, in its order, each with its own badge; nil: every one")
    func parts() throws {
        let made = try BatchNotifications(
            for: batch([(token(1), 3), ("zz-not-hex", 1), (token(2), nil), (token(3), 7)], badge: .increment), topic: bundleID)
        #expect(made.count == 3 && made.invalid == [1], "the position of the token that is not hex")
        #expect(Array(made.part(nil)).map(\.token.hex) == [token(1), token(2), token(3)])
        let part = Array(made.part([2, 0]))
        #expect(part.map(\.token.hex) == [token(3), token(1)])
        #expect(part.map { $0.payload.json["aps"]?["badge"]?.intValue } == [7, 3])
        #expect(made[1].payload.string == #"{"aps":{"alert":"hi"},"k":1}"#, "a device without a badge gets the payload as stored")
        #expect(Array(made.part([])).isEmpty)
    }

    @Test("withBadge sets aps.badge, adding aps where there is none, and keeps every other key")
    func withBadge() throws {
        func badged(_ text: String, _ badge: Int) throws -> JSONValue {
            BatchMessages.withBadge(badge, try EncodedPayload(validating: text)).json
        }
        #expect(try badged("{}", 5) == .object(["aps": .object(["badge": .int(5)])]))
        #expect(try badged(#"{"aps":{"badge":1,"sound":"s"},"x":[1]}"#, 0) == .object(["aps": .object(["badge": .int(0), "sound": .string("s")]), "x": .array([.int(1)])]))
        #expect(try badged(#"{"aps":"not an object"}"#, 2) == .object(["aps": .object(["badge": .int(2)])]))
        // The result is valid JSON a validating parse accepts.
        let bytes = BatchMessages.withBadge(9, try EncodedPayload(validating: #"{"aps":{"alert":"é \"q\""}}"#)).bytes
        #expect(try EncodedPayload(validating: bytes).json["aps"]?["alert"] == .string("é \"q\""))
        // Only objects are ever stored; anything else passes through untouched.
        let array = EncodedPayload(unchecked: Array("[1]".utf8))
        #expect(BatchMessages.withBadge(1, array) == array)
    }
}

extension BatchMessages {
    /// A batch's notifications as an array, with the tokens left out: what a test compares.
    static func notifications(for batch: WorkBatch, topic bundleID: String) throws(PayloadError) -> (notifications: [PushNotification], invalid: [String]) {
        let made = try BatchNotifications(for: batch, topic: bundleID)
        return (Array(made.part(nil)), made.invalid.map { batch.items[$0].token })
    }
}
