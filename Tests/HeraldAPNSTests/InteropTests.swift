import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import NIOHPACK
import Testing

/// Herald's HTTP/2 layer against swift-nio-http2, a strict independent implementation, in both
/// directions. A framing, HPACK or flow-control mistake on Herald's side ends these connections
/// with a protocol error.
@Suite("HTTP/2 interoperability with swift-nio-http2", .timeLimit(.minutes(6)))
struct InteropTests {
    @Test("Herald's client against a NIO HTTP/2 server with a 100-byte stream window and 5 streams")
    func clientAgainstNIOServer() async throws {
        let server = try NIOHTTP2TestServer()
        let port = try await server.start(initialWindowSize: 100, maximumConcurrentStreams: 5)
        var configuration = APNSClient.Configuration(environment: .custom(host: "127.0.0.1", port: port), credentials: .providerToken(.generate()))
        configuration.trustRoots = .only([try server.authority.tlsCertificate])
        configuration.retry = .none
        // Ten window round trips per notification, 20 streams at a time: while the other suites
        // load both cores that can take longer than the default deadline, which is not the point here.
        configuration.timeouts.request = .seconds(90)
        // ~1 KB payloads: each must be split across the 100-byte window and WINDOW_UPDATEs.
        let body = String(repeating: "x", count: 1000)
        let notifications = try (0..<300).map { try notification(to: token($0), apnsID: UUID(), body: body) }
        let outcomes = try await withAPNSClient(configuration: configuration) { client in
            try await sendAll(notifications, with: client)
        }
        for outcome in outcomes {
            #expect(outcome.response?.apnsID == notifications[outcome.index].headers.apnsID?.uuidString.lowercased(), "\(outcome.result)")
        }
        #expect(server.answered.withLockedValue { $0 } == 300)
        try await server.stop()
    }

    @Test("a NIO HTTP/2 client against Herald's mock: a valid request is accepted and its apns-id echoed")
    func nioClientAgainstMock() async throws {
        let fixture = try await MockFixture.start()
        let client = try await NIOHTTP2TestClient.connect(to: fixture.server)
        let jwt = try ProviderTokenIssuer(key: fixture.key).currentToken().jwt
        let id = UUID().uuidString.lowercased()
        let response = try await client.request(MockWireTests.headers(token: token(1), jwt: jwt, extra: [("apns-id", id)]), body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        #expect(response.status == 200)
        #expect(response.headers.first(name: "apns-id") == id)
        #expect(fixture.server.acceptedCount == 1)
        try await client.close()
        try await fixture.stop()
    }
}

/// The mock's answers over the wire, to requests an independent HTTP/2 client makes: every
/// error of apns-spec §1.7 whose cause the mock can see.
@Suite("Mock APNs validation over the wire", .timeLimit(.minutes(6)))
struct MockWireTests {
    static func headers(token: String, jwt: String?, method: String = "POST", path: String? = nil, topic: String? = MockFixture.topic, extra: [(String, String)] = []) -> [(String, String)] {
        var headers = [(":method", method), (":scheme", "https"), (":path", path ?? "/3/device/\(token)"), (":authority", "127.0.0.1")]
        if let jwt { headers.append(("authorization", "bearer \(jwt)")) }
        if let topic { headers.append(("apns-topic", topic)) }
        return headers + extra
    }

    static let body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    @Test("each malformed request gets APNs's status and reason")
    func rejections() async throws {
        let since = Date(timeIntervalSince1970: 1_700_000_000)
        let fixture = try await MockFixture.start { $0.script.unregister(token(9), since: since) }
        let client = try await NIOHTTP2TestClient.connect(to: fixture.server)
        let jwt = try ProviderTokenIssuer(key: fixture.key).currentToken().jwt
        let t = token(1)
        let cases: [(name: String, headers: [(String, String)], body: [UInt8]?, status: Int, reason: String)] = [
            ("GET", Self.headers(token: t, jwt: jwt, method: "GET"), Self.body, 405, "MethodNotAllowed"),
            ("other path", Self.headers(token: t, jwt: jwt, path: "/2/device/\(t)"), Self.body, 404, "BadPath"),
            ("no token", Self.headers(token: "", jwt: jwt), Self.body, 400, "MissingDeviceToken"),
            ("bad token", Self.headers(token: "xyz", jwt: jwt), Self.body, 400, "BadDeviceToken"),
            ("duplicate header", Self.headers(token: t, jwt: jwt, extra: [("apns-topic", MockFixture.topic)]), Self.body, 400, "DuplicateHeaders"),
            ("no topic", Self.headers(token: t, jwt: jwt, topic: nil), Self.body, 400, "MissingTopic"),
            ("voip topic mismatch", Self.headers(token: t, jwt: jwt, extra: [("apns-push-type", "voip")]), Self.body, 400, "BadTopic"),
            ("unknown push type", Self.headers(token: t, jwt: jwt, extra: [("apns-push-type", "banner")]), Self.body, 400, "InvalidPushType"),
            ("priority 7", Self.headers(token: t, jwt: jwt, extra: [("apns-priority", "7")]), Self.body, 400, "BadPriority"),
            ("background at 10", Self.headers(token: t, jwt: jwt, extra: [("apns-push-type", "background"), ("apns-priority", "10")]), Self.body, 400, "BadPriority"),
            ("expiration", Self.headers(token: t, jwt: jwt, extra: [("apns-expiration", "soon")]), Self.body, 400, "BadExpirationDate"),
            ("apns-id", Self.headers(token: t, jwt: jwt, extra: [("apns-id", "not-a-uuid")]), Self.body, 400, "BadMessageId"),
            ("collapse id", Self.headers(token: t, jwt: jwt, extra: [("apns-collapse-id", String(repeating: "c", count: 65))]), Self.body, 400, "BadCollapseId"),
            ("empty body", Self.headers(token: t, jwt: jwt), nil, 400, "PayloadEmpty"),
            ("4097 bytes", Self.headers(token: t, jwt: jwt), [UInt8](repeating: 0x20, count: 4097), 413, "PayloadTooLarge"),
            ("5121 bytes of VoIP", Self.headers(token: t, jwt: jwt, topic: MockFixture.topic + ".voip", extra: [("apns-push-type", "voip")]), [UInt8](repeating: 0x20, count: 5121), 413, "PayloadTooLarge"),
            ("unregistered", Self.headers(token: token(9), jwt: jwt), Self.body, 410, "Unregistered"),
        ]
        for entry in cases {
            let response = try await client.request(entry.headers, body: entry.body)
            #expect(response.status == entry.status, "\(entry.name)")
            #expect(response.reason == entry.reason, "\(entry.name): \(response.body)")
            #expect(response.headers.first(name: "content-type") == "application/json")
            if entry.reason == "Unregistered" {
                let json = try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any]
                #expect((json?["timestamp"] as? Int) == 1_700_000_000_000)
            }
        }
        // 5120 bytes of VoIP and 4096 of an alert are fine.
        let voip = try await client.request(Self.headers(token: t, jwt: jwt, topic: MockFixture.topic + ".voip", extra: [("apns-push-type", "voip")]), body: [UInt8](repeating: 0x20, count: 5120))
        #expect(voip.status == 200)
        let alert = try await client.request(Self.headers(token: t, jwt: jwt), body: [UInt8](repeating: 0x20, count: 4096))
        #expect(alert.status == 200)
        try await client.close()
        try await fixture.stop()
    }

    @Test("provider tokens: missing, unregistered key, bad signature, wrong team, expired, changed too soon")
    func providerTokens() async throws {
        let fixture = try await MockFixture.start()
        let t = token(1)
        func answer(_ jwt: String?, on client: NIOHTTP2TestClient) async throws -> NIOHTTP2TestClient.Response {
            try await client.request(Self.headers(token: t, jwt: jwt), body: Self.body)
        }
        let client = try await NIOHTTP2TestClient.connect(to: fixture.server)
        #expect(try await answer(nil, on: client).reason == "MissingProviderToken")
        let stranger = try ProviderToken(key: .generate(keyID: "UNKNOWNKEY"), issuedAt: Date()).jwt
        #expect(try await answer(stranger, on: client).reason == "InvalidProviderToken")
        let forged = try ProviderToken(key: .generate(keyID: fixture.key.keyID, teamID: fixture.key.teamID), issuedAt: Date()).jwt
        #expect(try await answer(forged, on: client).reason == "InvalidProviderToken")
        let otherTeam = try ProviderKey(pem: fixture.key.pemRepresentation, keyID: fixture.key.keyID, teamID: "OTHERTEAM1")
        #expect(try await answer(ProviderToken(key: otherTeam, issuedAt: Date()).jwt, on: client).reason == "InvalidProviderToken")
        let stale = try ProviderToken(key: fixture.key, issuedAt: Date().addingTimeInterval(-3700)).jwt
        let expired = try await answer(stale, on: client)
        #expect(expired.status == 403 && expired.reason == "ExpiredProviderToken")
        try await client.close()

        // On one connection, a token may not change within 20 minutes (apns-spec §2).
        let second = try await NIOHTTP2TestClient.connect(to: fixture.server)
        let first = try ProviderToken(key: fixture.key, issuedAt: Date().addingTimeInterval(-600)).jwt
        #expect(try await answer(first, on: second).status == 200)
        let soon = try ProviderToken(key: fixture.key, issuedAt: Date()).jwt
        let tooSoon = try await answer(soon, on: second)
        #expect(tooSoon.status == 429 && tooSoon.reason == "TooManyProviderTokenUpdates")
        try await second.close()
        try await fixture.stop()
    }
}
