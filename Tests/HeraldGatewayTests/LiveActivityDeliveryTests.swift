import Foundation
import HeraldCore
import HeraldAPNSMock
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Testing

/// A Live Activity's whole life through the gateway, against the mock: started on a user's
/// push-to-start tokens of its type, two update tokens reported, three updates (one retried,
/// keeping its timestamp), an end, and 409 after.
@Suite("Live Activities through the gateway", .timeLimit(.minutes(6)))
struct LiveActivityDeliveryTests {
    static let activityID = "2E1B6F0C-7A4D-4C1E-8B9F-5D3A2C1B0E9F"

    @Test("start, tokens, three updates with one retry, end, 409 after; bad input named", arguments: Backend.allCases)
    func life(backend: Backend) async throws {
        // The second update token's first update meets a 503 once: sent again about a second later.
        try await GatewayHarness.run(backend, mock: { $0.script.fail(token(21), with: .reject(.serviceUnavailable), times: 1) }) { harness in
            let devices = "/v1/apps/\(appID)/devices/"
            // ann's push-to-start tokens: one for deliveries, one for another activity type; and her alert token.
            try await harness.call(.put, devices + token(1), ["kind": "liveactivity", "activityType": "DeliveryAttributes", "user": "ann"])
            try await harness.call(.put, devices + token(2), ["kind": "liveactivity", "activityType": "ScoreAttributes", "user": "ann"])
            try await harness.call(.put, devices + token(3), ["user": "ann"])

            let started = try await harness.call(.post, "/v1/apps/\(appID)/activities", [
                "to": ["users": ["ann"]], "activityType": "DeliveryAttributes", "attributes": ["orderID": "A-1"],
                "contentState": ["stage": "packed"], "alert": ["title": "Order A-1", "body": "Packed"],
            ])
            #expect(started.status == 202, "\(started.json?.jsonString ?? "")")
            let start = try await harness.waitUntilDone(try #require(started.json?["id"]?.stringValue))
            #expect(start.count("targeted") == 1 && start.count("accepted") == 1 && start["pushType"]?.stringValue == "liveactivity")
            let startRecord = try #require(harness.mock.accepted.first { $0.token == token(1) })
            #expect(startRecord.pushType == "liveactivity" && startRecord.topic == "\(bundleID).push-type.liveactivity" && startRecord.priority == 10)
            let startAPS = try #require(try JSONValue(parsing: startRecord.payload)["aps"])
            #expect(startAPS["event"] == "start" && startAPS["attributes-type"] == "DeliveryAttributes" && startAPS["input-push-token"] == 1)
            #expect(startAPS["attributes"] == ["orderID": "A-1"] && startAPS["content-state"] == ["stage": "packed"])
            #expect(!harness.mock.accepted.contains { $0.token == token(2) || $0.token == token(3) }, "another type's token, an alert token")

            // The app reports the started activity's update tokens (the phone's and the watch's).
            let tokens = "/v1/apps/\(appID)/activities/\(Self.activityID)/tokens/"
            #expect(try await harness.call(.put, tokens + token(20), ["user": "ann"]).status == 201)
            #expect(try await harness.call(.put, tokens + token(21), ["user": "ann", "environment": "production"]).status == 201)
            #expect(try await harness.call(.put, tokens + token(21)).status == 200)
            let activity = try await harness.call(.get, "/v1/apps/\(appID)/activities/\(Self.activityID)")
            #expect(activity.json?["state"] == "active" && activity.json?["tokens"]?.arrayItems.count == 2)

            let events = "/v1/apps/\(appID)/activities/\(Self.activityID)/events"
            var accepted: [(id: String, before: Int, after: Int)] = []
            for stage in ["shipped", "out for delivery", "around the corner"] {
                let before = Int(Date().timeIntervalSince1970)
                let answer = try await harness.call(.post, events, ["event": "update", "contentState": ["stage": .string(stage)]])
                #expect(answer.status == 202, "\(answer.json?.jsonString ?? "")")
                accepted.append((try #require(answer.json?["id"]?.stringValue), before, Int(Date().timeIntervalSince1970)))
            }
            for (id, _, _) in accepted {
                let done = try await harness.waitUntilDone(id)
                #expect(done.count("targeted") == 2 && done.count("accepted") == 2, "\(done.jsonString)")
            }
            let updates = harness.mock.accepted.filter { (try? JSONValue(parsing: $0.payload))?["aps"]?["event"] == "update" }
            #expect(updates.count == 6 && updates.allSatisfy { $0.priority == 5 }, "updates without an alert go at priority 5")
            // The retried one carries the second it was accepted (its createdAt), not the time it
            // was sent again: its payload was made once, when accepted, so a late retry never
            // looks newer to the device than the update accepted after it.
            let retried = try #require(updates.first { $0.token == token(21) && (try? JSONValue(parsing: $0.payload))?["aps"]?["content-state"]?["stage"] == "shipped" })
            let timestamp = try #require(try JSONValue(parsing: retried.payload)["aps"]?["timestamp"]?.intValue)
            let created = try #require(try await harness.call(.get, "/v1/notifications/\(accepted[0].id)").json?["createdAt"]?.stringValue)
            let createdSeconds = try #require(try? Date(created, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)))
            #expect(timestamp == Int(createdSeconds.timeIntervalSince1970), "timestamp \(timestamp), accepted at \(created)")
            #expect((accepted[0].before...accepted[0].after).contains(timestamp))
            #expect(harness.mock.rejected.contains { $0.token == token(21) && $0.reason == "ServiceUnavailable" }, "the mock refused it once")

            let end = try await harness.call(.post, events, ["event": "end", "contentState": ["stage": "delivered"], "dismissalDate": 1, "idempotencyKey": "end"])
            #expect(end.status == 202)
            let ended = try await harness.waitUntilDone(try #require(end.json?["id"]?.stringValue))
            #expect(ended.count("accepted") == 2)
            let endAPS = try #require(harness.mock.accepted.compactMap { try? JSONValue(parsing: $0.payload)["aps"] }.first { $0["event"] == "end" })
            #expect(endAPS["dismissal-date"] == 1 && endAPS["content-state"] == ["stage": "delivered"])
            let replay = try await harness.call(.post, events, ["event": "end", "contentState": ["stage": "delivered"], "dismissalDate": 1, "idempotencyKey": "end"])
            #expect(replay.status == 202 && replay.json?["id"] == end.json?["id"], "the same end again: the first answer")

            let late = try await harness.call(.post, events, ["event": "update", "contentState": ["stage": "late"]])
            #expect(late.status == 409 && late.json?["error"]?["message"]?.stringValue?.contains("ended") == true)
            #expect(try await harness.call(.post, events, ["event": "end", "contentState": [:]]).status == 409)
            #expect(try await harness.call(.put, tokens + token(22)).status == 409)
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/activities/\(Self.activityID)").json?["state"] == "ended")

            // Bad input: each a 4xx naming what was wrong.
            let unknown = try await harness.call(.post, "/v1/apps/\(appID)/activities/nope/events", ["event": "update", "contentState": [:]])
            #expect(unknown.status == 404)
            let cases: [(JSONValue, String)] = [
                (["event": "begin", "contentState": [:]], "event"),
                (["event": "update"], "contentState"),
                (["event": "update", "contentState": "x"], "contentState"),
                (["event": "update", "contentState": [:], "dismissalDate": 5], "dismissalDate"),
                (["event": "update", "contentState": [:], "priority": 1], "priority"),
                (["event": "update", "contentState": [:], "staleDate": -1], "staleDate"),
            ]
            for (body, field) in cases {
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/activities/other/events", body)
                #expect(answer.status == 400 && answer.json?["error"]?["message"]?.stringValue?.contains(field) == true, "\(body.jsonString): \(answer.json?.jsonString ?? "")")
            }
            let starts: [(JSONValue, String)] = [
                (["to": ["all": true], "attributes": [:], "contentState": [:], "alert": "x"], "activityType"),
                (["to": ["all": true], "activityType": "A", "contentState": [:], "alert": "x"], "attributes"),
                (["to": ["all": true], "activityType": "A", "attributes": [:], "contentState": [:]], "alert"),
                (["to": ["all": true], "activityType": "bad type!", "attributes": [:], "contentState": [:], "alert": "x"], "activityType"),
            ]
            for (body, field) in starts {
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/activities", body)
                #expect(answer.status == 400 && answer.json?["error"]?["message"]?.stringValue?.contains(field) == true, "\(body.jsonString): \(answer.json?.jsonString ?? "")")
            }
            let viaNotifications = try await harness.call(.post, "/v1/apps/\(appID)/notifications", ["to": ["all": true], "payload": ["aps": [:]], "pushType": "liveactivity"])
            #expect(viaNotifications.status == 400 && viaNotifications.json?["error"]?["message"]?.stringValue?.contains("/activities") == true)
        }
    }
}

/// iOS 18 broadcast channels through the gateway, against the mock's channel-management API.
@Suite("Broadcast channels through the gateway", .timeLimit(.minutes(6)))
struct ChannelDeliveryTests {
    @Test("create, list, send an update and an end, delete; a no-storage channel takes expiration 0 only", arguments: Backend.allCases)
    func channels(backend: Backend) async throws {
        try await GatewayHarness.run(backend) { harness in
            let channels = "/v1/apps/\(appID)/channels"
            let quiet = try await harness.call(.post, channels, ["storagePolicy": "none"])
            #expect(quiet.status == 201, "\(quiet.json?.jsonString ?? "")")
            let kept = try await harness.call(.post, channels, ["storagePolicy": "mostRecent"])
            let quietID = try #require(quiet.json?["id"]?.stringValue)
            let keptID = try #require(kept.json?["id"]?.stringValue)
            #expect(Set(harness.mock.channelIDs(bundleID: bundleID)) == [quietID, keptID], "created at APNs")
            let listed = try await harness.call(.get, channels)
            #expect(listed.json?["channels"]?.arrayItems.compactMap { $0["id"]?.stringValue } == [quietID, keptID])
            #expect(listed.json?["channels"]?.arrayItems.first?["storagePolicy"] == "none")

            func path(_ id: String) -> String {
                "\(channels)/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)"
            }
            let update = try await harness.call(.post, path(quietID) + "/events", ["event": "update", "contentState": ["score": "1-0"]])
            #expect(update.status == 200 && update.json?["requestID"]?.stringValue?.isEmpty == false, "\(update.json?.jsonString ?? "")")
            let end = try await harness.call(.post, path(keptID) + "/events", ["event": "end", "contentState": ["score": "2-1"], "expiration": 4_102_444_800])
            #expect(end.status == 200, "\(end.json?.jsonString ?? "")")
            #expect(harness.mock.broadcastCount == 2, "one request each, however many listen")

            let stored = try await harness.call(.post, path(quietID) + "/events", ["event": "update", "contentState": [:], "expiration": 4_102_444_800])
            #expect(stored.status == 400 && stored.json?["error"]?["message"]?.stringValue?.contains("expiration") == true)
            #expect(try await harness.call(.post, path(quietID) + "/events", ["event": "start", "contentState": [:]]).status == 400)
            #expect(try await harness.call(.post, path("bm9uZQ==") + "/events", ["event": "update", "contentState": [:]]).status == 404)
            #expect(try await harness.call(.post, channels, ["storagePolicy": "forever"]).status == 400)
            #expect(try await harness.call(.post, channels, [:]).status == 400)

            #expect(try await harness.call(.delete, path(quietID)).status == 204)
            #expect(harness.mock.channelIDs(bundleID: bundleID) == [keptID], "deleted at APNs")
            #expect(try await harness.call(.delete, path(quietID)).status == 404)
            #expect(try await harness.call(.get, channels).json?["channels"]?.arrayItems.count == 1)
        }
    }
}

/// Credentials by token kind: a kind with a credential of its own is sent with it, every other
/// kind with the app's.
@Suite("Credentials by kind through the gateway", .timeLimit(.minutes(6)))
struct CredentialsByKindTests {
    @Test("voip goes with its own key (known to APNs), widgets with one APNs does not know (refused, retried), alerts with the app's")
    func perKind() async throws {
        let voipKey = ProviderKey.generate(keyID: "VOIPKEY001", teamID: "HERALDTEAM")
        try await GatewayHarness.run(
            .sqlite, mock: { $0.registerProviderKey(voipKey.publicKey, keyID: voipKey.keyID, teamID: voipKey.teamID) },
            gateway: { configuration in
                configuration.apps[0].credentialsByKind[.voip] = .providerToken(voipKey)
                configuration.apps[0].credentialsByKind[.widgets] = .providerToken(ProviderKey.generate(keyID: "UNKNOWN001", teamID: "HERALDTEAM"))
            }
        ) { harness in
            let devices = "/v1/apps/\(appID)/devices/"
            try await harness.call(.put, devices + token(1), [:])
            try await harness.call(.put, devices + token(2), ["kind": "voip"])
            try await harness.call(.put, devices + token(3), ["kind": "widgets"])
            func send(_ number: Int, _ pushType: String) async throws -> String {
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/notifications", [
                    "to": ["tokens": .array([.string(token(number))])], "payload": ["aps": pushType == "alert" ? ["alert": "hi"] : [:]], "pushType": .string(pushType),
                ])
                return try #require(answer.json?["id"]?.stringValue)
            }
            #expect(try await harness.waitUntilDone(try await send(1, "alert")).count("accepted") == 1)
            #expect(try await harness.waitUntilDone(try await send(2, "voip")).count("accepted") == 1, "its own key, which APNs knows")
            let widgets = try await send(3, "widgets")
            let refused = await eventually { harness.mock.rejected.contains { $0.token == token(3) && $0.reason == "InvalidProviderToken" } }
            #expect(refused, "APNs refuses the widgets key")
            #expect(!harness.mock.accepted.contains { $0.token == token(3) })
            #expect(try await harness.call(.delete, "/v1/notifications/\(widgets)").status == 200)
        }
    }
}
