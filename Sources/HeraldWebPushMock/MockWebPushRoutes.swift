import Crypto
import HeraldCore
import HeraldMockHTTP
import HeraldWebPush
import Logging
import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The mock push service's routes: `POST /subscribe` (the browser handing out a subscription) and
/// `POST /push/{id}` (the push resource, RFC 8030 §5). Decoding and answering only; the checks
/// are ``MockWebPushHeaders`` and `VAPID.verify`, the tables ``MockWebPushState``.
final class MockWebPushRoutes: MockHTTPHandler {
    /// The largest push body a push service must accept (RFC 8030 §7.2, RFC 8291 §4).
    static let maximumBodyCount = 4096
    /// The largest `POST /subscribe` body (`{"applicationServerKey": …}` is about 110 bytes).
    static let maximumSubscribeBodyCount = 8192

    let state: MockWebPushState
    let tokens = MockVerifiedTokens()
    private let decryptsMessages: Bool
    private let maximumSubscriptions: Int
    private let logger: Logger
    /// `https://HOST:PORT`, set once the listener is bound (before any request is served).
    private let originBox = Mutex("")

    init(configuration: MockWebPushServer.Configuration, logger: Logger) {
        state = MockWebPushState(maximumRecords: configuration.maximumRecords)
        decryptsMessages = configuration.decryptsMessages
        maximumSubscriptions = configuration.maximumSubscriptions
        self.logger = logger
    }

    var origin: String {
        get { originBox.withLock { $0 } }
        set { originBox.withLock { $0 = newValue } }
    }

    // MARK: Routing

    func maximumBodyCount(method: String, path: String) -> Int {
        path == "/subscribe" ? Self.maximumSubscribeBodyCount : Self.maximumBodyCount
    }

    /// What the mock serves, as its 404 says.
    static let routes: StaticString = "POST /subscribe and POST /push/{id}"

    /// `POST /subscribe` and `POST /push/{id}`; anything else 404.
    func respond(to request: MockHTTPRequest) -> MockHTTPReply {
        let segments = request.segments
        guard request.method == "POST" else { return .now(.notFound(serving: Self.routes)) }
        if segments == ["subscribe"] { return .now(subscribe(request)) }
        if segments.count == 2, segments[0] == "push" { return push(request, id: String(segments[1])) }
        return .now(.notFound(serving: Self.routes))
    }

    // MARK: Subscriptions

    /// A new subscription, with a fresh browser key and auth secret; `nil` past `limit`.
    func makeSubscription(applicationServerKey: [UInt8]?, limit: Int? = nil) -> WebPushSubscription? {
        let id = Base64URL.encode(Self.randomBytes(16))
        let privateKey = P256.KeyAgreement.PrivateKey()
        let authSecret = Self.randomBytes(16)
        let endpoint = origin + "/push/" + id
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(
                endpoint: endpoint, p256dh: Base64URL.encode(privateKey.publicKey.x963Representation), auth: Base64URL.encode(authSecret),
                policy: MockWebPushServer.subscriptionPolicy)
        } catch {
            preconditionFailure("the mock's own subscription is refused: \(error)")
        }
        let entry = MockWebPushState.Subscription(
            id: id, endpoint: subscription.endpoint, privateKey: privateKey, authSecret: authSecret, applicationServerKey: applicationServerKey)
        return state.add(entry, limit: limit) ? subscription : nil
    }

    /// `POST /subscribe`, optionally with `{"applicationServerKey": "<base64url>"}`: 201 with the
    /// subscription as a browser's `subscription.toJSON()` gives it.
    private func subscribe(_ request: MockHTTPRequest) -> MockHTTPResponse {
        let body: ByteBuffer
        do {
            body = try Self.body(of: request)
        } catch {
            return Self.answer(error)
        }
        var applicationServerKey: [UInt8]?
        if body.readableBytes > 0 {
            guard let json = try? JSONValue(parsing: body.readableBytesView), json.objectValue != nil else {
                return Self.answer(MockWebPushRejection(status: 400, reason: "BadSubscribeRequest"))
            }
            switch json["applicationServerKey"] {
            case nil, .null?:
                break
            case .string(let text)?:
                guard let key = Base64URL.decode(text), key.count == 65, (try? P256.Signing.PublicKey(x963Representation: key)) != nil else {
                    return Self.answer(MockWebPushRejection(status: 400, reason: "BadApplicationServerKey"))
                }
                applicationServerKey = key
            default:
                return Self.answer(MockWebPushRejection(status: 400, reason: "BadApplicationServerKey"))
            }
        }
        guard let subscription = makeSubscription(applicationServerKey: applicationServerKey, limit: maximumSubscriptions) else {
            logger.debug("POST /subscribe refused: the mock holds its maximum of subscriptions", metadata: ["maximum": "\(maximumSubscriptions)"])
            return Self.answer(MockWebPushRejection(status: 507, reason: "TooManySubscriptions"))
        }
        // RFC 8030 §4: the push resource, as a link.
        let link = "<\(subscription.endpoint.absoluteString)>; rel=\"urn:ietf:params:push\""
        return MockHTTPResponse(status: 201, headers: [("content-type", "application/json"), ("link", link)], body: Self.browserJSON(subscription))
    }

    /// `{"endpoint":…,"expirationTime":null,"keys":{"p256dh":…,"auth":…}}`, in the browser's order.
    static func browserJSON(_ subscription: WebPushSubscription) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key("endpoint")
        writer.string(subscription.endpoint.absoluteString)
        writer.key("expirationTime")
        writer.null()
        writer.key("keys")
        writer.beginObject()
        writer.key("p256dh")
        writer.string(Base64URL.encode(subscription.p256dh))
        writer.key("auth")
        writer.string(Base64URL.encode(subscription.authSecret))
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    // MARK: Push

    /// `POST /push/{id}`: checked in the order a push service checks (see ``MockWebPushServer``).
    private func push(_ request: MockHTTPRequest, id: String) -> MockHTTPReply {
        state.countRequest()
        do {
            let (subscription, checked, body) = try check(request, id: id)
            switch state.takeFault(for: id) {
            case nil: break
            case .gone?: throw MockWebPushRejection.gone
            case .notFound?: throw MockWebPushRejection.notFound
            case .tooLarge?: throw MockWebPushRejection.payloadTooLarge
            case .tooManyRequests(let seconds, _)?: throw MockWebPushRejection.tooManyRequests(retryAfterSeconds: seconds)
            case .serverError(let status, _)?: throw MockWebPushRejection.serverError(status: status)
            case .reject(let status, let reason, _)?: throw MockWebPushRejection(status: status, reason: reason)
            case .delay(let duration, _)?:
                return .after(duration) { self.accept(body, id: id, subscription: subscription, checked: checked, httpVersion: request.httpVersion) }
            }
            return .now(accept(body, id: id, subscription: subscription, checked: checked, httpVersion: request.httpVersion))
        } catch let error as MockWebPushRejection {
            return .now(refuse(error, id: id))
        } catch {
            return .now(refuse(.badRequest, id: id))
        }
    }

    /// What a push request passed steps 1 to 5 with.
    private struct Checked {
        var headers: MockWebPushHeaders
        var vapid: VerifiedVAPID
    }

    /// Steps 1 to 5: the subscription, VAPID, the headers and the body.
    private func check(_ request: MockHTTPRequest, id: String) throws(MockWebPushRejection) -> (MockWebPushState.Subscription, Checked, ByteBuffer) {
        guard let subscription = state.subscription(id) else { throw .notFound }
        if subscription.isGone { throw .gone }

        guard let authorization = request.header("authorization") else {
            logger.debug("push refused: no Authorization header (RFC 8292 §3)")
            throw .badJwtToken
        }
        let vapid: VerifiedVAPID
        do {
            vapid = try tokens.verify(authorization, origin: origin, now: Date())
        } catch {
            logger.debug("push refused: VAPID", metadata: ["error": "\(PeerText(error.message, limit: 512))"])
            throw .badJwtToken
        }
        if let key = subscription.applicationServerKey, key != vapid.publicKey {
            logger.debug("push refused: the VAPID key k is not the applicationServerKey the subscription was made with (RFC 8292 §4)")
            throw .vapidKeyMismatch
        }

        let headers = try MockWebPushHeaders(
            ttl: request.header("ttl"), urgency: request.header("urgency"), topic: request.header("topic"),
            contentEncoding: request.header("content-encoding"))
        return (subscription, Checked(headers: headers, vapid: vapid), try Self.body(of: request))
    }

    /// Step 7 and the answer: the message decrypted and recorded (201), or refused.
    private func accept(
        _ body: ByteBuffer, id: String, subscription: MockWebPushState.Subscription, checked: Checked, httpVersion: Int
    ) -> MockHTTPResponse {
        let bytes = Array(body.readableBytesView)
        var plaintext: [UInt8]?
        if decryptsMessages {
            do {
                plaintext = try WebPushEncryption.decrypt(bytes, privateKey: subscription.privateKey, authSecret: subscription.authSecret)
            } catch {
                logger.debug("push refused: the message does not decrypt as the browser would", metadata: ["error": "\(error.message)"])
                return refuse(.decryptionFailed, id: id)
            }
        }
        let message = MockWebPushMessage(
            subscriptionID: id, endpoint: subscription.endpoint, messageID: UUID().uuidString.lowercased(), plaintext: plaintext,
            bodyCount: bytes.count, ttl: checked.headers.ttl, urgency: checked.headers.urgency, topic: checked.headers.topic,
            vapidSubject: checked.vapid.claims.subject, vapidPublicKey: checked.vapid.publicKey, httpVersion: httpVersion, receivedAt: Date())
        state.record(message)
        return MockHTTPResponse(status: 201, headers: [("location", "/message/" + message.messageID)])
    }

    /// A refusal's answer, counted by its reason.
    private func refuse(_ rejection: MockWebPushRejection, id: String) -> MockHTTPResponse {
        state.countRejection(rejection.reason)
        logger.debug(
            "push refused",
            metadata: ["subscription": "\(PeerText(id, limit: 64))", "status": "\(rejection.status)", "reason": "\(PeerText(rejection.reason))"])
        return Self.answer(rejection)
    }

    // MARK: Reading and answering

    /// The body, refused with 413 past the route's bound (``maximumBodyCount(method:path:)``).
    static func body(of request: MockHTTPRequest) throws(MockWebPushRejection) -> ByteBuffer {
        switch request.body {
        case .bytes(let body): body
        case .tooLarge: throw .payloadTooLarge
        case .unreadable: throw .badRequest
        }
    }

    /// `status` with `{"reason": …}` (and `Retry-After`).
    static func answer(_ rejection: MockWebPushRejection) -> MockHTTPResponse {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.key("reason")
        writer.string(rejection.reason)
        writer.endObject()
        var headers = [(name: "content-type", value: "application/json")]
        if let seconds = rejection.retryAfterSeconds { headers.append(("retry-after", String(seconds))) }
        return MockHTTPResponse(status: rejection.status, headers: headers, body: writer.bytes)
    }

    private static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in generator.next() }
    }
}
