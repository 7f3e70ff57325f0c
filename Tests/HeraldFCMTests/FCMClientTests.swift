import Foundation
import HeraldCore
import HeraldFCM
import HeraldFCMMock
import HeraldTestSupport
import MetricsTestKit
import Testing

/// The client against the mock FCM over loopback TLS and HTTP/2.
@Suite("FCM client against the mock", .timeLimit(.minutes(6)))
struct FCMClientTests {
    /// Fast retries: the storms below are a few attempts each.
    static let retry = FCMRetryPolicy(maximumAttempts: 4, backoff: Backoff(initial: .milliseconds(10), maximum: .milliseconds(50)), maximumRetryAfterSeconds: 0)

    static func configuration(_ server: MockFCMServer, retry: FCMRetryPolicy = retry) -> FCMClient.Configuration {
        var configuration = FCMClient.Configuration(serviceAccount: server.serviceAccount)
        configuration.endpoint = server.origin
        configuration.additionalTrustRoots = [server.certificateAuthority]
        configuration.retry = retry
        configuration.requestTimeout = .seconds(20)
        return configuration
    }

    static func token(_ n: Int) -> String { "device-\(n):APA91b" + String(repeating: "x", count: 40) }

    static func message(_ n: Int = 0) -> FCMMessage {
        FCMMessage(token: token(n), notification: .init(title: "Score", body: "2-1"), data: ["match": "42"], android: .init(priority: .high, timeToLive: .seconds(60)))
    }

    @Test("a configuration that cannot work is refused when the client is made, naming the field", arguments: [
        ("http://fcm.example.com", "herald-test", "endpoint"), ("ftp://127.0.0.1", "herald-test", "endpoint"), ("https://fcm.googleapis.com", "a/b", "projectID"),
    ])
    func configurationRefused(endpoint: String, project: String, field: String) throws {
        var configuration = FCMClient.Configuration(serviceAccount: try TestAccount.make())
        configuration.endpoint = endpoint
        configuration.projectID = project
        do {
            let client = try FCMClient(configuration: configuration)
            Issue.record("made a client for \(endpoint) \(project): \(client)")
        } catch {
            #expect(error.code == .invalidConfiguration && error.field == field)
        }
    }

    @Test("a message is accepted over HTTP/2 with FCM's name, and the mock received what was sent; one access token")
    func accepted() async throws {
        try await withMockFCMServer { server in
            try await withFCMClient(configuration: Self.configuration(server)) { client in
                let receipt = try await client.send(Self.message())
                #expect(receipt.name == "projects/herald-mock/messages/1" && receipt.attempts == 1)
                let second = try await client.send(Self.message(1))
                #expect(second.name == "projects/herald-mock/messages/2")
            }
            let received = try #require(server.received.first)
            #expect(received.token == Self.token(0) && received.title == "Score" && received.body == "2-1" && received.data == ["match": "42"])
            #expect(received.message["android"] == ["priority": "high", "ttl": "60s"])
            #expect(received.httpVersion == 2)
            #expect(server.tokenRequestCount == 1)
        }
    }

    @Test("the transport's metrics are FCM's own, labelled by platform: sent, connections and latency, with the client's dimensions")
    func metrics() async throws {
        let metrics = TestMetrics()
        let dimensions = [("app", "shop")]
        try await withMockFCMServer { server in
            var configuration = Self.configuration(server)
            configuration.metricsDimensions = dimensions
            configuration.metricsFactory = metrics
            configuration.maximumConnections = 1
            try await withFCMClient(configuration: configuration) { client in
                let results = await client.send(Self.message(), toEach: (0..<3).map(Self.token))
                #expect(results.allSatisfy { (try? $0.get()) != nil })
            }
        }
        #expect(try metrics.expectCounter("herald_fcm_sent_total", dimensions).totalValue == 3)
        #expect(try metrics.expectCounter("herald_fcm_connections_opened_total", dimensions).totalValue == 1)
        #expect(try metrics.expectTimer("herald_fcm_latency", dimensions).values.count == 3)
        #expect(throws: (any Error).self) { try metrics.expectCounter("herald_apns_sent_total", dimensions) }
    }

    @Test("UNREGISTERED: the token is gone, not retried; the others of a group are accepted")
    func unregistered() async throws {
        try await withMockFCMServer { server in
            server.unregister(Self.token(3))
            try await withFCMClient(configuration: Self.configuration(server)) { client in
                do throws(FCMSendError) {
                    try await client.send(Self.message(3))
                    Issue.record("an unregistered token was accepted")
                } catch {
                    #expect(error.isTokenGone && error.code == .unregistered && error.status == 404 && error.errorCode == "UNREGISTERED" && error.attempts == 1)
                }
                let results = await client.send(Self.message(), toEach: (0..<8).map(Self.token))
                for (index, result) in results.enumerated() {
                    switch result {
                    case .success(let receipt): #expect(index != 3 && receipt.name != nil)
                    case .failure(let error): #expect(index == 3 && error.isTokenGone)
                    }
                }
            }
            #expect(server.receivedCount == 7 && server.requestCount == 9)
        }
    }

    @Test("a 429 storm, with and without Retry-After, then success; a 503 storm past the attempts fails as unavailable")
    func storms() async throws {
        try await withMockFCMServer { server in
            server.script(.quotaExceeded(retryAfterSeconds: 0, times: 2), for: Self.token(1))
            server.script(.quotaExceeded(retryAfterSeconds: nil, times: 1), for: Self.token(1))
            server.script(.unavailable(times: 10), for: Self.token(2))
            server.script(.internalError(times: 2), for: Self.token(4))
            try await withFCMClient(configuration: Self.configuration(server)) { client in
                let receipt = try await client.send(Self.message(1))
                #expect(receipt.attempts == 4)
                do throws(FCMSendError) {
                    try await client.send(Self.message(2))
                    Issue.record("a 503 storm ended in success")
                } catch {
                    #expect(error.code == .unavailable && error.attempts == 4 && error.errorCode == "UNAVAILABLE" && !error.isTokenGone)
                }
                let results = await client.send(Self.message(), toEach: [Self.token(4), Self.token(5)])
                #expect(try results[0].get().attempts == 3 && results[1].get().attempts == 1)
            }
            #expect(server.rejectionsByReason == ["QUOTA_EXCEEDED": 3, "UNAVAILABLE": 4, "INTERNAL": 2])
        }
    }

    @Test("an access token expired early: one refresh and one retry per expiry, whatever the load; the retried messages are accepted")
    func refreshOnce() async throws {
        try await withMockFCMServer { server in
            try await withFCMClient(configuration: Self.configuration(server)) { client in
                try await client.send(Self.message())
                #expect(server.tokenRequestCount == 1)
                server.expireAccessTokens()
                let receipt = try await client.send(Self.message(1))
                #expect(receipt.attempts == 2)
                #expect(server.tokenRequestCount == 2)
                for round in 1...3 {
                    server.expireAccessTokens()
                    // Many sends at once all meet the 401; one token request serves them.
                    try await withThrowingTaskGroup(of: FCMReceipt.self) { group in
                        for n in 0..<40 { group.addTask { try await client.send(Self.message(n)) } }
                        for try await receipt in group { #expect(receipt.name != nil) }
                    }
                    let grouped = await client.send(Self.message(), toEach: (0..<20).map(Self.token))
                    #expect(grouped.allSatisfy { (try? $0.get()) != nil })
                    #expect(server.tokenRequestCount == 2 + round, "one token request per expiry")
                }
            }
            #expect(server.tokenRequestCount == server.accessTokensIssued)
        }
    }

    @Test("short-lived access tokens are refreshed ahead of expiry under load: token requests follow the lifetime, never the messages")
    func refreshAhead() async throws {
        var configuration = MockFCMServer.Configuration()
        configuration.accessTokenLifetime = .seconds(2)
        try await withMockFCMServer(configuration: configuration) { server in
            let clock = ContinuousClock()
            let start = clock.now
            var sent = 0
            try await withFCMClient(configuration: Self.configuration(server)) { client in
                // Waves of 20 until the first token was refreshed (at 1.8 s) and 200 were sent;
                // bounded at 300 waves.
                for _ in 0..<300 where server.tokenRequestCount < 2 || sent < 200 {
                    try await withThrowingTaskGroup(of: FCMReceipt.self) { group in
                        for n in 0..<20 { group.addTask { try await client.send(Self.message(n)) } }
                        for try await _ in group { sent += 1 }
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            let elapsed = clock.now - start
            let requests = server.tokenRequestCount
            #expect(requests >= 2, "refreshed once the margin was reached")
            // One request per 1.8 s of the run (the refresh point), plus the first, plus one
            // per 401 if a loaded machine held a message past its token's expiry.
            let perLifetime = Int(elapsed / .milliseconds(1800)) + 1
            let unauthorized = server.rejectionsByReason["UNAUTHENTICATED"] ?? 0
            #expect(requests <= perLifetime + unauthorized + 1, "\(requests) token requests in \(elapsed)")
            #expect(requests * 10 < sent, "never a token per message: \(requests) for \(sent)")
        }
    }

    @Test("THIRD_PARTY_AUTH_ERROR is a permanent failure with its reason, without a token refresh; SENDER_ID_MISMATCH and an invalid token are typed")
    func permanent() async throws {
        try await withMockFCMServer { server in
            server.script(.thirdPartyAuthError, for: Self.token(1))
            server.script(.senderIDMismatch, for: Self.token(2))
            server.script(.invalidToken, for: Self.token(3))
            try await withFCMClient(configuration: Self.configuration(server)) { client in
                let results = await client.send(Self.message(), toEach: [Self.token(1), Self.token(2), Self.token(3)])
                let errors = results.map { result -> FCMSendError? in
                    if case .failure(let error) = result { return error }
                    return nil
                }
                #expect(errors[0]?.code == .thirdPartyAuthError && errors[0]?.reason == "Auth error from APNS or Web Push Service" && errors[0]?.attempts == 1)
                #expect(errors[0]?.isTokenGone == false && errors[0]?.isTokenInvalid == false)
                #expect(errors[1]?.code == .senderIDMismatch && errors[1]?.isTokenInvalid == true)
                #expect(errors[2]?.code == .invalidArgument && errors[2]?.isTokenInvalid == true)
            }
            #expect(server.tokenRequestCount == 1)
            #expect(server.requestCount == 3)
        }
    }

    @Test("an invalid message is refused before sending, naming the field; the mock refuses one sent raw with a BadRequest that retires nothing")
    func invalidMessages() async throws {
        try await withMockFCMServer { server in
            try await withFCMClient(configuration: Self.configuration(server)) { client in
                do throws(FCMSendError) {
                    try await client.send(FCMMessage(token: Self.token(0), data: ["google.sent_time": "1"]))
                    Issue.record("a reserved key was sent")
                } catch {
                    #expect(error.code == .invalidMessage && error.reason.contains("google.sent_time") && error.attempts == 0)
                }
                do throws(FCMSendError) {
                    try await client.send(FCMMessage(token: "has space"))
                    Issue.record("an invalid token was sent")
                } catch {
                    #expect(error.code == .invalidMessage && error.reason.contains("message.token"))
                }
            }
            #expect(server.requestCount == 0)
        }
    }

    @Test("a hostile server's huge error body is read only to a bound, and its text bounded")
    func hugeErrorBody() async throws {
        try await withMockFCMServer { server in
            server.script(.answer(status: 400, body: [UInt8](repeating: UInt8(ascii: "A"), count: 4 << 20), times: 1), for: Self.token(1))
            server.script(.answer(status: 503, body: Array(#"{"error":{"message":"\#(String(repeating: "z", count: 100_000))"}}"#.utf8), times: 1), for: Self.token(2))
            try await withFCMClient(configuration: Self.configuration(server)) { client in
                do throws(FCMSendError) {
                    try await client.send(Self.message(1))
                    Issue.record("accepted")
                } catch {
                    #expect(error.code == .invalidArgument && error.reason.count <= 201 && !error.isTokenInvalid)
                }
                let receipt = try await client.send(Self.message(2))
                #expect(receipt.attempts == 2)
                // The connection still serves.
                #expect(try await client.send(Self.message(3)).attempts == 1)
            }
        }
    }

    @Test("GOAWAY under load, twice: what it left unprocessed is sent again on a new connection; every message is delivered once and every caller has its outcome")
    func goAway() async throws {
        try await withMockFCMServer { server in
            // The second counts from the first: GOAWAY on the first connection and on the next.
            server.scriptAll(.goAway(afterRequests: 25))
            server.scriptAll(.goAway(afterRequests: 50))
            var configuration = Self.configuration(server)
            configuration.maximumConnections = 1
            try await withFCMClient(configuration: configuration) { client in
                // A group and single sends at once, as the gateway's batches and its API's sends.
                async let grouped = client.send(Self.message(), toEach: (0..<120).map(Self.token))
                let singles = await withTaskGroup(of: Result<FCMReceipt, FCMSendError>.self) { group in
                    for n in 120..<160 {
                        group.addTask {
                            do throws(FCMSendError) {
                                return .success(try await client.send(Self.message(n)))
                            } catch {
                                return .failure(error)
                            }
                        }
                    }
                    var results: [Result<FCMReceipt, FCMSendError>] = []
                    for await result in group { results.append(result) }
                    return results
                }
                let results = await grouped + singles
                #expect(results.count == 160)
                let receipts = results.compactMap { try? $0.get() }
                let failures = results.compactMap { result -> String? in
                    if case .failure(let error) = result { return "\(error)" }
                    return nil
                }
                #expect(failures.isEmpty, "\(failures.prefix(3))")
                // Sent again because the server never processed them: not a second attempt.
                #expect(receipts.allSatisfy { $0.attempts == 1 })
                #expect(Set(receipts.compactMap(\.name)).count == 160, "each message named once")
            }
            // Each message processed exactly once: the two that met GOAWAY were not, nor was
            // anything after them on their connections.
            #expect(server.rejectionsByReason == ["GOAWAY": 2])
            #expect(server.receivedCount == 160 && server.requestCount == 162)
            let tokens = server.received.map(\.token)
            #expect(tokens.count == 160 && Set(tokens) == Set((0..<160).map(Self.token)))
        }
    }

    @Test("a client whose token endpoint refuses the assertion fails with the endpoint's reason, and does not send")
    func tokenRefused() async throws {
        try await withMockFCMServer { server in
            let other = try TestAccount.make(tokenURI: server.serviceAccount.tokenURI)
            var configuration = Self.configuration(server)
            configuration.serviceAccount = other
            configuration.projectID = "herald-mock"
            try await withFCMClient(configuration: configuration) { client in
                do throws(FCMSendError) {
                    try await client.send(Self.message())
                    Issue.record("sent with a foreign key")
                } catch {
                    #expect(error.code == .tokenRefused && error.reason.contains("invalid_grant") && error.attempts == 1)
                }
            }
            #expect(server.requestCount == 0 && server.tokenRequestCount == 1)
        }
    }
}
