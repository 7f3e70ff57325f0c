import HeraldCore
import HeraldHMS
import HeraldHMSMock
import Testing

/// The client against the mock Push Kit over loopback TLS and HTTP/2.
@Suite("Push Kit client against the mock", .timeLimit(.minutes(3)))
struct HMSClientTests {
    static let retry = HMSRetryPolicy(maximumAttempts: 3, backoff: Backoff(initial: .milliseconds(10), maximum: .milliseconds(50), jitter: 0), maximumRetryAfterSeconds: 2)

    static func withClient<R: Sendable>(_ body: (MockHMSServer, HMSClient) async throws -> R) async throws -> R {
        try await withMockHMSServer { server in
            var configuration = HMSClient.Configuration(app: server.appCredentials, serviceAccount: server.serviceAccount)
            configuration.endpoint = server.origin
            configuration.additionalTrustRoots = [server.certificateAuthority]
            configuration.retry = retry
            return try await withHMSClient(configuration: configuration) { client in try await body(server, client) }
        }
    }

    static let tokens = ["AAWWHI94sgUR2RU5_P1ZptUiwLq7W8XWJO2Lxa-1", "AAWWHI94sgUR2RU5_P1ZptUiwLq7W8XWJO2Lxa-2", "MAM0Ku+harmony/3="]

    @Test("v1 and v3 messages are accepted; one access token and one JWT serve every send")
    func accepted() async throws {
        try await Self.withClient { server, client in
            for _ in 0..<3 {
                let receipt = try await client.send(HMSAndroidMessage(tokens: Self.tokens, notification: .init(title: "Hi", body: "There")))
                #expect(receipt.isComplete && receipt.attempts == 1 && receipt.requestID?.hasPrefix("mock") == true)
            }
            let receipt = try await client.send(HMSHarmonyMessage.notification(tokens: [Self.tokens[2]], title: "Hi", body: "There"))
            #expect(receipt.isComplete)
            #expect(server.receivedCount == 4 && server.tokenRequestCount == 1 && client.signedJWTCount == 1)
            let v3 = server.received.last
            #expect(v3?.apiVersion == 3 && v3?.pushType == 0 && v3?.tokens == [Self.tokens[2]])
            #expect(server.received.first?.tokens == Self.tokens)
        }
    }

    @Test("a partial success names the invalid tokens; all invalid fails naming them all")
    func partialSuccess() async throws {
        try await Self.withClient { server, client in
            server.invalidate(Self.tokens[1])
            let receipt = try await client.send(HMSAndroidMessage(tokens: Self.tokens, data: "{\"k\":1}"))
            #expect(receipt.failedTokens == [HMSFailedToken(token: Self.tokens[1], isTokenInvalid: true)] && receipt.failureCount == 1)
            #expect(server.received.last?.tokens == [Self.tokens[0], Self.tokens[2]])
            let v3 = try await client.send(HMSHarmonyMessage.notification(tokens: [Self.tokens[0], Self.tokens[1]], title: "a", body: "b"))
            #expect(v3.failedTokens == [HMSFailedToken(token: Self.tokens[1], reason: "tokenFormatError", isTokenInvalid: true)])
            let error = await #expect(throws: HMSSendError.self) { try await client.send(HMSAndroidMessage(tokens: [Self.tokens[1]], data: "x")) }
            #expect(error?.code == .allTokensInvalid && error?.failedTokens.map(\.token) == [Self.tokens[1]] && error?.isTokenInvalid == true)
        }
    }

    @Test("429 is retried after its Retry-After; 503 and 500 are retried too")
    func retried() async throws {
        try await Self.withClient { server, client in
            server.script(.rateLimited(retryAfterSeconds: 1, times: 1))
            let receipt = try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x"))
            #expect(receipt.attempts == 2)
            server.script(.trafficControl(retryAfterSeconds: nil, times: 1))
            server.script(.internalError(times: 1))
            let v3 = try await client.send(HMSHarmonyMessage.notification(tokens: [Self.tokens[0]], title: "a", body: "b"))
            #expect(v3.attempts == 3)
            server.script(.badGateway(times: 3))
            let error = await #expect(throws: HMSSendError.self) { try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x")) }
            #expect(error?.code == .unavailable && error?.attempts == 3)
            #expect(server.rejectionsByReason["429"] == 1 && server.rejectionsByReason["503"] == 1 && server.rejectionsByReason["502"] == 3)
        }
    }

    @Test("an expired access token (401 80200003) is renewed once and the message sent again")
    func renewed() async throws {
        try await Self.withClient { server, client in
            try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x"))
            server.expireAccessTokens()
            let receipt = try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x"))
            #expect(receipt.attempts == 2 && server.tokenRequestCount == 2 && server.rejectionsByReason["80200003"] == 1)
            // A 401 that persists: one renewal, then unauthenticated.
            server.script(.answer(status: 401, body: Array(#"{"code":"80200001","msg":"Oauth authentication error"}"#.utf8), times: 2))
            let error = await #expect(throws: HMSSendError.self) { try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x")) }
            #expect(error?.code == .unauthenticated && error?.attempts == 2 && server.tokenRequestCount == 3)
        }
    }

    @Test("refused before sending: an invalid message, or an API without credentials")
    func refusedLocally() async throws {
        try await withMockHMSServer { server in
            var configuration = HMSClient.Configuration(app: server.appCredentials)
            configuration.endpoint = server.origin
            configuration.additionalTrustRoots = [server.certificateAuthority]
            try await withHMSClient(configuration: configuration) { client in
                let invalid = await #expect(throws: HMSSendError.self) { try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]])) }
                #expect(invalid?.code == .invalidRequest && invalid?.attempts == 0)
                let v3 = await #expect(throws: HMSSendError.self) {
                    try await client.send(HMSHarmonyMessage.notification(tokens: [Self.tokens[0]], title: "a", body: "b"))
                }
                #expect(v3?.code == .notConfigured)
            }
            #expect(server.requestCount == 0)
        }
        #expect(throws: HMSError.self) { try HMSClient(configuration: HMSClient.Configuration()) }
    }

    @Test("a wrong client secret is refused by the token endpoint, not retried, and never printed")
    func wrongSecret() async throws {
        try await withMockHMSServer { server in
            let wrong = try HMSAppCredentials(clientID: server.appCredentials.clientID, clientSecret: "not-the-secret-xyz", tokenURI: server.appCredentials.tokenURI)
            var configuration = HMSClient.Configuration(app: wrong)
            configuration.endpoint = server.origin
            configuration.additionalTrustRoots = [server.certificateAuthority]
            try await withHMSClient(configuration: configuration) { client in
                let error = await #expect(throws: HMSSendError.self) { try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x")) }
                #expect(error?.code == .tokenRefused && error?.reason.contains("12304") == true && error?.reason.contains("not-the-secret") == false)
            }
            #expect(server.requestCount == 0 && server.tokenRequestCount == 1)
        }
    }

    @Test("hostile answers: an oversized body, non-JSON, escape sequences in msg")
    func hostile() async throws {
        try await Self.withClient { server, client in
            let huge = Array(#"{"code":"80100003","msg":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 200_000) + Array(#""}"#.utf8)
            server.script(.answer(status: 400, body: huge, times: 1))
            let oversized = await #expect(throws: HMSSendError.self) { try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x")) }
            #expect(oversized?.code == .rejected && (oversized?.reason.count ?? 1000) <= 300)

            server.script(.answer(status: 200, body: Array("<html>\u{1B}[2Jproxy</html>".utf8), times: 1))
            let html = await #expect(throws: HMSSendError.self) { try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x")) }
            #expect(html?.code == .rejected && html?.reason.contains("\u{1B}") == false)

            let escapes = #"{"code":"80100003","msg":"\u001b]0;pwned\u0007\u001b[31mred","requestId":"\u001b[2J"}"#
            server.script(.answer(status: 400, body: Array(escapes.utf8), times: 1))
            let escaped = await #expect(throws: HMSSendError.self) { try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x")) }
            #expect(escaped?.code == .invalidMessage && escaped?.reason.contains("\u{1B}") == false && escaped?.reason.contains("\u{07}") == false)
            #expect(escaped.map { "\($0)" }?.contains("\u{1B}") == false)

            // A partial success naming tokens that were not sent retires none of them.
            let forged = #"{"code":"80100000","msg":"{\"failure\":2,\"illegal_tokens\":[\"someone-else\",\"\\u001b[31m\"]}"}"#
            server.script(.answer(status: 200, body: Array(forged.utf8), times: 1))
            let receipt = try await client.send(HMSAndroidMessage(tokens: [Self.tokens[0]], data: "x"))
            #expect(receipt.failedTokens.isEmpty && receipt.failureCount == 2)
        }
    }
}
