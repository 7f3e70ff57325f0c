import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldWebPush
@testable import HeraldWebPushMock
import NIOCore
import NIOSSL
import Testing

/// The mock Web Push service over loopback TLS, driven by AsyncHTTPClient as an application
/// server would: what it accepts, records and decrypts, each refusal with its status and reason,
/// the scripted faults, and an independent sender (pywebpush) it must agree with.
@Suite("Mock Web Push service", .timeLimit(.minutes(6)))
struct MockWebPushServerTests {
    static let subject = "mailto:ops@example.com"

    // MARK: Accepted messages

    @Test("a good push over HTTP/2 is 201 with Location, and recorded decrypted with its TTL, urgency, topic and VAPID identity")
    func goodPushOverHTTP2() async throws {
        try await withMockWebPushServer { server in
            let subscription = server.subscribe()
            let key = VAPIDKey.generate()
            let answer = try await Sender.with(server, key: key) { sender in
                try await sender.push("hello, browser", to: subscription, urgency: "high", topic: "news1234")
            }
            #expect(answer.status == 201)
            #expect(answer.httpVersion == 2)
            #expect(answer.location?.hasPrefix("/message/") == true)
            #expect(answer.body.isEmpty)
            let message = try #require(server.received.first)
            #expect(server.received.count == 1 && server.receivedCount == 1 && server.requestCount == 1)
            #expect(message.text == "hello, browser")
            #expect(message.ttl == 60 && message.urgency == "high" && message.topic == "news1234")
            #expect(message.httpVersion == 2)
            #expect(message.endpoint == subscription.endpoint && message.subscriptionID == subscription.endpoint.lastPathComponent)
            #expect(answer.location == "/message/" + message.messageID)
            #expect(message.vapidSubject == Self.subject)
            #expect(message.vapidPublicKey == Array(key.publicKey.x963Representation))
            #expect(message.bodyCount == WebPushEncryption.headerCount + "hello, browser".utf8.count + 1 + 16)
            #expect(server.received(for: subscription).count == 1 && server.received(for: server.subscribe()).isEmpty)
        }
    }

    @Test("offersHTTP2 false: ALPN offers HTTP/1.1 only, and the message records HTTP/1.1")
    func http1Only() async throws {
        var configuration = MockWebPushServer.Configuration()
        configuration.offersHTTP2 = false
        try await withMockWebPushServer(configuration: configuration) { server in
            let subscription = server.subscribe()
            let answers = try await Sender.with(server) { sender in
                [try await sender.push("one", to: subscription), try await sender.push("two", to: subscription)]
            }
            #expect(answers.map(\.status) == [201, 201])
            #expect(answers.map(\.httpVersion) == [1, 1])
            #expect(server.received.map(\.httpVersion) == [1, 1])
            #expect(server.received.compactMap(\.text) == ["one", "two"])
        }
    }

    @Test("the endpoint's origin is the server's, and the largest plaintext (3993 bytes) is accepted")
    func originAndLargest() async throws {
        try await withMockWebPushServer { server in
            #expect(server.origin == "https://127.0.0.1:\(server.port)")
            let subscription = server.subscribe()
            #expect(subscription.origin == server.origin)
            #expect(subscription.endpoint.absoluteString.hasPrefix(server.origin + "/push/"))
            let largest = [UInt8](repeating: 0x61, count: WebPushEncryption.maximumPlaintextCount)
            let answer = try await Sender.with(server) { try await $0.push(largest, to: subscription) }
            #expect(answer.status == 201)
            #expect(server.received.first?.plaintext == largest && server.received.first?.bodyCount == 4096)
        }
    }

    // MARK: Refusals

    /// A push that a push service refuses, with what it answers.
    enum BadPush: String, CaseIterable, Sendable {
        case noAuthorization, wrongAudience, expired, expiresInTwoDays, subjectWithoutScheme, wrongSignature, keyOtherThanSubscriptions
        case noTTL, negativeTTL, badUrgency, topicOf33, topicOutsideBase64URL, noContentEncoding, otherContentEncoding
        case bodyOf4097, streamedBodyOf4097, garbageBody, unknownSubscription, unsubscribed

        var expected: (status: Int, reason: String) {
            switch self {
            case .noAuthorization, .wrongAudience, .expired, .expiresInTwoDays, .subjectWithoutScheme, .wrongSignature: (403, "BadJwtToken")
            case .keyOtherThanSubscriptions: (403, "VapidPkHashMismatch")
            case .noTTL, .negativeTTL: (400, "BadTtl")
            case .badUrgency: (400, "BadUrgency")
            case .topicOf33, .topicOutsideBase64URL: (400, "BadWebPushTopic")
            case .noContentEncoding, .otherContentEncoding: (400, "BadContentEncoding")
            case .bodyOf4097, .streamedBodyOf4097: (413, "PayloadTooLarge")
            case .garbageBody: (400, "DecryptionFailed")
            case .unknownSubscription: (404, "NotFound")
            case .unsubscribed: (410, "Unregistered")
            }
        }
    }

    @Test("each bad push is refused with its status and reason, and nothing is recorded", arguments: BadPush.allCases)
    func refused(_ bad: BadPush) async throws {
        try await withMockWebPushServer { server in
            let key = VAPIDKey.generate()
            let other = VAPIDKey.generate()
            var subscription = server.subscribe(applicationServerKey: bad == .keyOtherThanSubscriptions ? Array(other.publicKey.x963Representation) : nil)
            let now = Date()
            func token(audience: String = server.origin, expiresIn: TimeInterval = 3600, subject: String = Self.subject, signer: VAPIDKey = key) throws -> String {
                let claims = VAPIDClaims(audience: audience, expiresAt: now.addingTimeInterval(expiresIn), subject: subject)
                return VAPID.authorization(token: try VAPID.token(key: signer, claims: claims), key: key)
            }
            var request = Sender.Request()
            switch bad {
            case .noAuthorization: request.authorization = .some(nil)
            case .wrongAudience: request.authorization = try token(audience: "https://web.push.apple.com")
            case .expired: request.authorization = try token(expiresIn: -60)
            case .expiresInTwoDays: request.authorization = try token(expiresIn: 2 * 86400)
            case .subjectWithoutScheme: request.authorization = try token(subject: "ops@example.com")
            case .wrongSignature: request.authorization = try token(signer: other)
            case .keyOtherThanSubscriptions: break
            case .noTTL: request.ttl = nil
            case .negativeTTL: request.ttl = "-1"
            case .badUrgency: request.urgency = "urgent"
            case .topicOf33: request.topic = String(repeating: "a", count: 33)
            case .topicOutsideBase64URL: request.topic = "news+1=="
            case .noContentEncoding: request.contentEncoding = nil
            case .otherContentEncoding: request.contentEncoding = "aesgcm"
            case .bodyOf4097: request.body = [UInt8](repeating: 7, count: 4097)
            case .streamedBodyOf4097:
                request.body = [UInt8](repeating: 7, count: 4097)
                request.streamed = true
            case .garbageBody: request.body = (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            case .unknownSubscription:
                subscription = try WebPushSubscription(
                    endpoint: server.origin + "/push/unknown", p256dh: Base64URL.encode(subscription.p256dh), auth: Base64URL.encode(subscription.authSecret), policy: MockWebPushServer.subscriptionPolicy)
            case .unsubscribed: server.unsubscribe(subscription)
            }
            let answer = try await Sender.with(server, key: key) { try await $0.send(request, to: subscription) }
            #expect(answer.status == bad.expected.status)
            #expect(answer.reason == bad.expected.reason)
            #expect(server.receivedCount == 0 && server.received.isEmpty)
            #expect(server.requestCount == 1)
            #expect(server.rejectionsByReason == [bad.expected.reason: 1])
        }
    }

    @Test("the subscription is checked first, then VAPID, then the headers, then the body: a request wrong in every way is 404")
    func checkOrder() async throws {
        try await withMockWebPushServer { server in
            let subscription = server.subscribe()
            let answers = try await Sender.with(server) { sender in
                var everythingWrong = Sender.Request()
                everythingWrong.authorization = .some("vapid t=x, k=y")
                everythingWrong.ttl = nil
                everythingWrong.contentEncoding = nil
                everythingWrong.body = [1, 2, 3]
                let unknown = try WebPushSubscription(
                    endpoint: server.origin + "/push/nope", p256dh: Base64URL.encode(subscription.p256dh), auth: Base64URL.encode(subscription.authSecret), policy: MockWebPushServer.subscriptionPolicy)
                var badHeaders = Sender.Request()
                badHeaders.ttl = nil
                badHeaders.contentEncoding = nil
                badHeaders.body = [1, 2, 3]
                var badEncoding = Sender.Request()
                badEncoding.contentEncoding = nil
                badEncoding.body = [UInt8](repeating: 0, count: 5000)
                return [
                    try await sender.send(everythingWrong, to: unknown), try await sender.send(everythingWrong, to: subscription),
                    try await sender.send(badHeaders, to: subscription), try await sender.send(badEncoding, to: subscription),
                ]
            }
            #expect(answers.map(\.status) == [404, 403, 400, 400])
            #expect(answers.map(\.reason) == ["NotFound", "BadJwtToken", "BadTtl", "BadContentEncoding"])
        }
    }

    @Test("topics: 32 base64url characters pass, and so does any length but 4n+1 (which Apple refuses)")
    func topicRules() {
        #expect(MockWebPushHeaders.isValidTopic(String(repeating: "A", count: 32)))
        #expect(MockWebPushHeaders.isValidTopic("a-b_C9") && MockWebPushHeaders.isValidTopic("news"))
        #expect(!MockWebPushHeaders.isValidTopic(String(repeating: "A", count: 33)))
        #expect(!MockWebPushHeaders.isValidTopic("") && !MockWebPushHeaders.isValidTopic("spike") && !MockWebPushHeaders.isValidTopic("neue-angebote"))
        #expect(!MockWebPushHeaders.isValidTopic("news.123") && !MockWebPushHeaders.isValidTopic("nëws"))
        #expect(MockWebPushHeaders.wholeNumber("0") == 0 && MockWebPushHeaders.wholeNumber("2419200") == 2_419_200)
        #expect(MockWebPushHeaders.wholeNumber("+5") == nil && MockWebPushHeaders.wholeNumber(" 5") == nil && MockWebPushHeaders.wholeNumber("99999999999999999999") == nil)
    }

    @Test("a reused Authorization header is verified once and answered from the cache, which stays within its bound")
    func tokenCache() throws {
        let tokens = MockVerifiedTokens(capacity: 2)
        let origin = "https://127.0.0.1:1"
        let signers = try (0..<3).map { _ in try VAPIDSigner(key: .generate(), subject: Self.subject) }
        let headers = try signers.map { try $0.authorization(origin: origin) }
        let first = try tokens.verify(headers[0], origin: origin, now: Date())
        #expect(try tokens.verify(headers[0], origin: origin, now: Date()) == first)
        #expect(tokens.count == 1)
        for header in headers { _ = try tokens.verify(header, origin: origin, now: Date()) }
        #expect(tokens.count == 2)
        // An entry is never answered past its token's expiry.
        #expect(throws: WebPushError.self) { try tokens.verify(headers[2], origin: origin, now: Date().addingTimeInterval(13 * 3600)) }
    }

    // MARK: Scripted faults

    @Test("429 with Retry-After, then success")
    func tooManyRequestsThenSuccess() async throws {
        try await withMockWebPushServer { server in
            let subscription = server.subscribe()
            server.script(.tooManyRequests(retryAfterSeconds: 7, times: 1), for: subscription)
            let answers = try await Sender.with(server) { sender in
                [try await sender.push("a", to: subscription), try await sender.push("b", to: subscription)]
            }
            #expect(answers.map(\.status) == [429, 201])
            #expect(answers[0].reason == "TooManyRequests" && answers[0].retryAfter == "7")
            #expect(server.received.compactMap(\.text) == ["b"])
        }
    }

    @Test("503 twice, then success; other statuses answer InternalServerError")
    func serverErrorThenSuccess() async throws {
        try await withMockWebPushServer { server in
            let subscription = server.subscribe()
            server.script(.serverError(status: 503, times: 2), for: subscription)
            server.script(.serverError(status: 500, times: 1), for: subscription)
            let answers = try await Sender.with(server) { sender in
                var answers: [Sender.Answer] = []
                for _ in 0..<4 { answers.append(try await sender.push("x", to: subscription)) }
                return answers
            }
            #expect(answers.map(\.status) == [503, 503, 500, 201])
            #expect(answers.map(\.reason) == ["ServiceUnavailable", "ServiceUnavailable", "InternalServerError", nil])
            #expect(server.receivedCount == 1 && server.requestCount == 4)
        }
    }

    @Test("gone, notFound and tooLarge apply to every request until cleared; reject answers its own status and reason")
    func permanentFaults() async throws {
        try await withMockWebPushServer { server in
            let gone = server.subscribe()
            let missing = server.subscribe()
            let large = server.subscribe()
            let rejected = server.subscribe()
            server.script(.gone, for: gone)
            server.script(.notFound, for: missing)
            server.script(.tooLarge, for: large)
            server.script(.reject(status: 400, reason: "Custom", times: 1), for: rejected)
            let answers = try await Sender.with(server) { sender in
                var answers: [Sender.Answer] = []
                for subscription in [gone, missing, large, gone, missing, large, rejected, rejected] {
                    answers.append(try await sender.push("x", to: subscription))
                }
                server.clearScripts()
                answers.append(try await sender.push("after", to: gone))
                return answers
            }
            #expect(answers.map(\.status) == [410, 404, 413, 410, 404, 413, 400, 201, 201])
            #expect(answers.map(\.reason) == ["Unregistered", "NotFound", "PayloadTooLarge", "Unregistered", "NotFound", "PayloadTooLarge", "Custom", nil, nil])
        }
    }

    @Test("a subscription's own faults come before the global ones, each list in the order scripted")
    func faultOrder() async throws {
        try await withMockWebPushServer { server in
            let subscription = server.subscribe()
            let bystander = server.subscribe()
            server.scriptAll(.serverError(status: 502, times: 1))
            server.scriptAll(.reject(status: 429, reason: "Global", times: 1))
            server.script(.tooManyRequests(retryAfterSeconds: 1, times: 1), for: subscription)
            let answers = try await Sender.with(server) { sender in
                var answers: [Sender.Answer] = []
                for target in [subscription, subscription, bystander, subscription] {
                    answers.append(try await sender.push("x", to: target))
                }
                return answers
            }
            #expect(answers.map(\.status) == [429, 502, 429, 201])
            #expect(answers.map(\.reason) == ["TooManyRequests", "InternalServerError", "Global", nil])
        }
    }

    @Test("delay: the answer waits, then the message is accepted as if nothing were scripted")
    func delay() async throws {
        try await withMockWebPushServer { server in
            let subscription = server.subscribe()
            server.script(.delay(.seconds(2), times: 1), for: subscription)
            let answer = try await Sender.with(server) { sender in
                async let delayed = sender.push("late", to: subscription)
                // The request has arrived and is held: not yet recorded.
                var polls = 0
                while server.requestCount == 0, polls < 3000 {
                    try await Task.sleep(for: .milliseconds(1))
                    polls += 1
                }
                #expect(server.requestCount == 1 && server.receivedCount == 0)
                return try await delayed
            }
            #expect(answer.status == 201)
            #expect(server.received.compactMap(\.text) == ["late"])
        }
    }

    // MARK: Subscriptions and bounds

    @Test("POST /subscribe answers 201 with the subscription as a browser's toJSON() gives it, and pushes to it decrypt")
    func subscribeRoute() async throws {
        try await withMockWebPushServer { server in
            let (answer, pushed) = try await Sender.with(server) { sender in
                let answer = try await sender.post("/subscribe", body: [])
                let subscription = try WebPushSubscription(json: answer.body, policy: MockWebPushServer.subscriptionPolicy)
                return (answer, try await sender.push("to a POSTed subscription", to: subscription))
            }
            #expect(answer.status == 201)
            #expect(answer.contentType == "application/json")
            let text = String(decoding: answer.body, as: UTF8.self)
            #expect(text.hasPrefix(#"{"endpoint":""#) && text.contains(#""expirationTime":null,"keys":{"p256dh":""#))
            let json = try JSONValue(parsing: answer.body)
            #expect(json.objectValue.map { Set($0.keys) } == ["endpoint", "expirationTime", "keys"])
            #expect(json["keys"]?.objectValue.map { Set($0.keys) } == ["p256dh", "auth"])
            #expect(json["expirationTime"] == .null)
            #expect(json["endpoint"]?.stringValue?.hasPrefix(server.origin + "/push/") == true)
            #expect(json["keys"]?["p256dh"]?.stringValue.flatMap { Base64URL.decode($0) }?.count == 65)
            #expect(json["keys"]?["auth"]?.stringValue.flatMap { Base64URL.decode($0) }?.count == 16)
            #expect(pushed.status == 201)
            #expect(server.received.first?.text == "to a POSTed subscription")
        }
    }

    @Test("POST /subscribe with an applicationServerKey: pushes must be signed by it; a bad key is 400")
    func subscribeWithKey() async throws {
        try await withMockWebPushServer { server in
            let key = VAPIDKey.generate()
            let answers = try await Sender.with(server, key: key) { sender in
                let created = try await sender.post("/subscribe", body: Array(#"{"applicationServerKey":"\#(key.publicKeyBase64URL)"}"#.utf8))
                let subscription = try WebPushSubscription(json: created.body, policy: MockWebPushServer.subscriptionPolicy)
                let signed = try await sender.push("signed", to: subscription)
                var other = Sender.Request()
                other.authorization = try VAPIDSigner(key: .generate(), subject: Self.subject).authorization(origin: server.origin)
                let otherKey = try await sender.send(other, to: subscription)
                let badKey = try await sender.post("/subscribe", body: Array(#"{"applicationServerKey":"AAAA"}"#.utf8))
                let notJSON = try await sender.post("/subscribe", body: Array("applicationServerKey".utf8))
                return [created, signed, otherKey, badKey, notJSON]
            }
            #expect(answers.map(\.status) == [201, 201, 403, 400, 400])
            #expect(answers[2].reason == "VapidPkHashMismatch" && answers[3].reason == "BadApplicationServerKey" && answers[4].reason == "BadSubscribeRequest")
            #expect(server.received.compactMap(\.text) == ["signed"])
        }
    }

    @Test("past maximumSubscriptions POST /subscribe answers 507 TooManySubscriptions; the test's own subscribe() still works")
    func subscriptionBound() async throws {
        var configuration = MockWebPushServer.Configuration()
        configuration.maximumSubscriptions = 2
        try await withMockWebPushServer(configuration: configuration) { server in
            _ = server.subscribe()
            let answers = try await Sender.with(server) { sender in
                [try await sender.post("/subscribe", body: []), try await sender.post("/subscribe", body: [])]
            }
            #expect(answers.map(\.status) == [201, 507])
            #expect(answers[1].reason == "TooManySubscriptions")
            _ = server.subscribe()
            #expect(server.subscriptionCount == 3)
        }
    }

    @Test("past maximumRecords the oldest records are dropped and counted; the counts stay exact")
    func recordBound() async throws {
        var configuration = MockWebPushServer.Configuration()
        configuration.maximumRecords = 3
        try await withMockWebPushServer(configuration: configuration) { server in
            let subscription = server.subscribe()
            let statuses = try await Sender.with(server) { sender in
                var statuses: [Int] = []
                for index in 0..<5 { statuses.append(try await sender.push("\(index)", to: subscription).status) }
                return statuses
            }
            #expect(statuses == [201, 201, 201, 201, 201])
            #expect(server.received.compactMap(\.text) == ["2", "3", "4"])
            #expect(server.receivedCount == 5 && server.droppedRecordCount == 2)
        }
    }

    @Test("decryptsMessages false: messages are recorded with their size only, and an undecryptable body is accepted")
    func withoutDecryption() async throws {
        var configuration = MockWebPushServer.Configuration()
        configuration.decryptsMessages = false
        try await withMockWebPushServer(configuration: configuration) { server in
            let subscription = server.subscribe()
            var garbage = Sender.Request()
            garbage.body = [UInt8](repeating: 1, count: 100)
            let answer = try await Sender.with(server) { try await $0.send(garbage, to: subscription) }
            #expect(answer.status == 201)
            #expect(server.received.first?.plaintext == nil && server.received.first?.bodyCount == 100)
        }
    }

    @Test("start throws when its port is taken, and a shut-down mock refuses connections")
    func startAndShutdown() async throws {
        let first = try await MockWebPushServer.start()
        var taken = MockWebPushServer.Configuration()
        taken.port = first.port
        await #expect(throws: (any Error).self) { _ = try await MockWebPushServer.start(configuration: taken) }
        try await first.shutdown()
        let subscription = first.subscribe()
        // AsyncHTTPClient retries a refused connection until its connect timeout.
        await #expect(throws: (any Error).self) {
            _ = try await Sender.with(first, connectTimeout: .milliseconds(500)) { try await $0.push("late", to: subscription) }
        }
        #expect(first.requestCount == 0)
    }

    // MARK: An independent sender

    @Test("pywebpush, an independent implementation, sends to a subscription from POST /subscribe and the mock decrypts it")
    func pywebpush() async throws {
        try await PythonPeers.require(.pywebpush)
        try await withMockWebPushServer { server in
            let scratch = try ScratchDirectory()
            let caFile = try scratch.write("ca.pem", server.certificateAuthorityPEM)
            let key = VAPIDKey.generate()
            let keyFile = try scratch.write("vapid.pem", key.pemRepresentation)
            let script = """
                import sys, requests
                from pywebpush import webpush
                ca, origin, key = sys.argv[1:4]
                session = requests.Session()
                session.trust_env = False
                session.verify = ca
                created = session.post(origin + "/subscribe", timeout=30)
                assert created.status_code == 201, created.text
                response = webpush(created.json(), data="hello from pywebpush", vapid_private_key=key,
                                   vapid_claims={"sub": "mailto:ops@example.com"}, ttl=120,
                                   headers={"Urgency": "low", "Topic": "pywebpush0"}, requests_session=session, timeout=30)
                print(response.status_code, response.headers.get("Location"))
                """
            let output = try await runCommand("python3", ["-c", script, caFile, server.origin, keyFile])
            #expect(output.standardOutput.hasPrefix("201 /message/"), "\(output.all)")
            let message = try #require(server.received.first)
            #expect(message.text == "hello from pywebpush")
            #expect(message.ttl == 120 && message.urgency == "low" && message.topic == "pywebpush0")
            #expect(message.vapidSubject == Self.subject && message.vapidPublicKey == Array(key.publicKey.x963Representation))
            #expect(message.httpVersion == 1)
        }
    }

}

extension MockWebPushServerTests {
    /// An application server: AsyncHTTPClient trusting the mock's CA, signing with a VAPID key.
    struct Sender: Sendable {
        /// A push request; the defaults make a good one.
        struct Request: Sendable {
            /// `nil`: signed by the sender's key; `.some(nil)`: no header.
            var authorization: String??
            var ttl: String? = "60"
            var urgency: String?
            var topic: String?
            var contentEncoding: String? = "aes128gcm"
            /// `nil`: `plaintext` encrypted for the subscription.
            var body: [UInt8]?
            var plaintext = Array("hello".utf8)
            /// Sent without a Content-Length.
            var streamed = false
        }

        /// What the mock answered.
        struct Answer: Sendable {
            var status: Int
            var httpVersion: Int
            var body: [UInt8]
            var location: String?
            var retryAfter: String?
            var contentType: String?
            /// `{"reason": …}`, when the body has one.
            var reason: String? { (try? JSONValue(parsing: body))?["reason"]?.stringValue }
        }

        let client: HTTPClient
        let server: MockWebPushServer
        let signer: VAPIDSigner

        /// Runs `body` with a sender, and always shuts its client down.
        static func with<Result>(
            _ server: MockWebPushServer, key: VAPIDKey = .generate(), connectTimeout: TimeAmount = .seconds(10), _ body: (Sender) async throws -> Result
        ) async throws -> Result {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates([server.certificateAuthority])
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.timeout.connect = connectTimeout
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            let result: Result
            do {
                result = try await body(Sender(client: client, server: server, signer: try VAPIDSigner(key: key, subject: MockWebPushServerTests.subject)))
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
            return result
        }

        func push(_ text: String, to subscription: WebPushSubscription, urgency: String? = nil, topic: String? = nil) async throws -> Answer {
            try await push(Array(text.utf8), to: subscription, urgency: urgency, topic: topic)
        }

        func push(_ plaintext: [UInt8], to subscription: WebPushSubscription, urgency: String? = nil, topic: String? = nil) async throws -> Answer {
            var request = Request()
            request.plaintext = plaintext
            request.urgency = urgency
            request.topic = topic
            return try await send(request, to: subscription)
        }

        func send(_ push: Request, to subscription: WebPushSubscription) async throws -> Answer {
            var request = HTTPClientRequest(url: subscription.endpoint.absoluteString)
            request.method = .POST
            switch push.authorization {
            case nil: request.headers.add(name: "Authorization", value: try signer.authorization(origin: server.origin))
            case .some(let header?): request.headers.add(name: "Authorization", value: header)
            case .some(nil): break
            }
            if let ttl = push.ttl { request.headers.add(name: "TTL", value: ttl) }
            if let urgency = push.urgency { request.headers.add(name: "Urgency", value: urgency) }
            if let topic = push.topic { request.headers.add(name: "Topic", value: topic) }
            if let encoding = push.contentEncoding { request.headers.add(name: "Content-Encoding", value: encoding) }
            let body = try push.body ?? WebPushEncryption.encrypt(push.plaintext, for: subscription)
            if push.streamed {
                let chunks = stride(from: 0, to: body.count, by: 1000).map { ByteBuffer(bytes: body[$0..<min($0 + 1000, body.count)]) }
                request.body = .stream(chunks.async, length: .unknown)
            } else {
                request.body = .bytes(ByteBuffer(bytes: body))
            }
            return try await execute(request)
        }

        func post(_ path: String, body: [UInt8]) async throws -> Answer {
            var request = HTTPClientRequest(url: server.origin + path)
            request.method = .POST
            if !body.isEmpty {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: body))
            }
            return try await execute(request)
        }

        private func execute(_ request: HTTPClientRequest) async throws -> Answer {
            let response = try await client.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 16)
            return Answer(
                status: Int(response.status.code), httpVersion: response.version.major, body: Array(body.readableBytesView),
                location: response.headers.first(name: "Location"), retryAfter: response.headers.first(name: "Retry-After"),
                contentType: response.headers.first(name: "Content-Type"))
        }
    }
}

/// The elements of an array, one at a time, as an `AsyncSequence` (a streamed request body).
private struct AsyncArray<Element: Sendable>: AsyncSequence, Sendable {
    let elements: [Element]

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: ArraySlice<Element>
        mutating func next() async -> Element? { remaining.popFirst() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: elements[...]) }
}

extension Array where Element: Sendable {
    fileprivate var async: AsyncArray<Element> { AsyncArray(elements: self) }
}
