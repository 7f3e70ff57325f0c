import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import Testing

/// field-lessons #9: Live Activities and iOS 18 broadcast channels, complete (apns-spec §1.9, §3.1).
@Suite("Live Activities, channels and broadcasts", .timeLimit(.minutes(6)))
struct BroadcastTests {
    static let bundleID = "com.example.herald"

    func liveActivityPayload(event: LiveActivityEvent) throws -> EncodedPayload {
        var aps = APS()
        aps.event = event
        aps.timestamp = Date()
        aps.contentState = ["score": 3]
        if event == .end { aps.dismissalDate = Date().addingTimeInterval(60) }
        return try Payload(aps: aps).encode()
    }

    @Test("create, read, list and delete a channel; broadcast on it; APNs's rules on the way")
    func channelLifecycle() async throws {
        let fixture = try await MockFixture.start()
        try await withAPNSClient(configuration: fixture.clientConfiguration { $0.retry = .none }) { client in
            let stored = try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .mostRecentMessage)
            let unstored = try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .noStorage, requestID: UUID())
            #expect(!stored.id.isEmpty && Data(base64Encoded: stored.id) != nil)
            #expect(try await client.channel(stored.id, bundleID: Self.bundleID).storagePolicy == .mostRecentMessage)
            #expect(try await client.channel(unstored.id, bundleID: Self.bundleID).storagePolicy == .noStorage)
            #expect(Set(try await client.channels(bundleID: Self.bundleID)) == [stored.id, unstored.id])

            let requestID = UUID()
            let response = try await client.send(BroadcastNotification(
                bundleID: Self.bundleID, channelID: stored.id, payload: liveActivityPayload(event: .update), requestID: requestID
            ))
            #expect(response.requestID == requestID.uuidString.lowercased())
            _ = try await client.send(BroadcastNotification(
                bundleID: Self.bundleID, channelID: unstored.id, payload: liveActivityPayload(event: .end), priority: .throttled, expiration: .immediately
            ))

            // A no-storage channel takes only apns-expiration 0.
            let stale = await #expect(throws: APNSError.self) {
                try await client.send(BroadcastNotification(bundleID: Self.bundleID, channelID: unstored.id, payload: liveActivityPayload(event: .update)))
            }
            #expect(stale?.reason == .badExpirationDate)
            let unknown = await #expect(throws: APNSError.self) {
                try await client.send(BroadcastNotification(bundleID: Self.bundleID, channelID: "dW5rbm93bg==", payload: liveActivityPayload(event: .update)))
            }
            #expect(unknown?.reason == .channelNotRegistered)
            let large = try EncodedPayload(validating: #"{"aps":{"alert":""#.utf8 + Array(repeating: UInt8(ascii: "a"), count: 5200) + #""}}"#.utf8)
            let tooLarge = await #expect(throws: APNSError.self) {
                try await client.send(BroadcastNotification(bundleID: Self.bundleID, channelID: stored.id, payload: large))
            }
            #expect(tooLarge?.reason == .payloadTooLarge && tooLarge?.origin == .local)

            try await client.deleteChannel(stored.id, bundleID: Self.bundleID)
            #expect(try await client.channels(bundleID: Self.bundleID) == [unstored.id])
            let gone = await #expect(throws: APNSError.self) { try await client.channel(stored.id, bundleID: Self.bundleID) }
            #expect(gone?.reason == .channelNotRegistered)
            #expect(gone?.status == 400)
        }
        #expect(fixture.server.broadcastCount == 2)
        try await fixture.stop()
    }

    @Test("a push-to-start with the iOS 18 keys: input-push-token, input-push-channel, filter-criteria")
    func pushToStart() async throws {
        let fixture = try await MockFixture.start()
        var alert = AlertContent(title: .localized(key: "GAME_START", arguments: ["Blue"]), body: "Kick-off")
        alert.sound = "whistle.caf"
        var aps = APS(alert: .content(alert))
        aps.event = .start
        aps.timestamp = Date()
        aps.attributesType = "MatchAttributes"
        try aps.setAttributes(["matchID": "m-1"])
        try aps.setContentState(["score": 0])
        aps.inputPushToken = true
        aps.inputPushChannel = "dHN0LXNyY2gtY2hubA=="
        aps.filterCriteria = "sports"
        let notification = try PushNotification(
            token: DeviceToken(String(repeating: "9f", count: 80)),  // Live Activity tokens are long
            headers: PushHeaders(pushType: .liveactivity, topic: PushType.liveactivity.topic(forBundleID: Self.bundleID)),
            payload: Payload(aps: aps)
        )
        _ = try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
            try await client.send(notification)
        }
        let record = try #require(fixture.server.accepted.first)
        #expect(record.pushType == "liveactivity")
        #expect(record.token.count == 160)
        let json = try JSONValue(parsing: record.payload)
        #expect(json["aps"]?["input-push-token"] == 1)
        #expect(json["aps"]?["input-push-channel"] == "dHN0LXNyY2gtY2hubA==")
        #expect(json["aps"]?["filter-criteria"] == "sports")
        #expect(json["aps"]?["alert"]?["title"] == ["loc-key": "GAME_START", "loc-args": ["Blue"]])
        try await fixture.stop()
    }
}
