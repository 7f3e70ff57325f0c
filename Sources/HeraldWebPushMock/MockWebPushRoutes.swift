import Crypto
import HeraldCore
import HeraldMockHTTP
import HeraldWebPush
import Hummingbird
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
final class MockWebPushRoutes: Sendable {
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

    func add(to router: Router<MockHTTPContext>) {
        router.post("subscribe") { request, _ in await self.subscribe(request) }
        router.post("push/:id") { request, context in await self.push(request, context: context) }
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
                endpoint: endpoint, p256dh: Base64URL.encode(privateKey.publicKey.x963Representation), auth: Base64URL.encode(authSecret))
        } catch {
            preconditionFailure("the mock's own subscription is refused: \(error)")
        }
        let entry = MockWebPushState.Subscription(
            id: id, endpoint: subscription.endpoint, privateKey: privateKey, authSecret: authSecret, applicationServerKey: applicationServerKey)
        return state.add(entry, limit: limit) ? subscription : nil
    }

    /// `POST /subscribe`, optionally with `{"applicationServerKey": "<base64url>"}`: 201 with the
    /// subscription as a browser's `subscription.toJSON()` gives it.
    private func subscribe(_ request: Request) async -> Response {
        let body: ByteBuffer
        do {
            body = try await Self.readBody(request, limit: Self.maximumSubscribeBodyCount)
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
        var headers: HTTPFields = [.contentType: "application/json"]
        // RFC 8030 §4: the push resource, as a link.
        headers[.init("Link")!] = "<\(subscription.endpoint.absoluteString)>; rel=\"urn:ietf:params:push\""
        return Response(status: .created, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: Self.browserJSON(subscription))))
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
    private func push(_ request: Request, context: MockHTTPContext) async -> Response {
        state.countRequest()
        let id = context.parameters.get("id") ?? ""
        do {
            let message = try await accept(request, id: id, httpVersion: context.httpVersion)
            state.record(message)
            return Response(status: .created, headers: [.location: "/message/" + message.messageID])
        } catch {
            state.countRejection(error.reason)
            logger.debug(
                "push refused", metadata: ["subscription": "\(PeerText(id, limit: 64))", "status": "\(error.status)", "reason": "\(PeerText(error.reason))"])
            return Self.answer(error)
        }
    }

    private func accept(_ request: Request, id: String, httpVersion: Int) async throws(MockWebPushRejection) -> MockWebPushMessage {
        guard let subscription = state.subscription(id) else { throw .notFound }
        if subscription.isGone { throw .gone }

        guard let authorization = request.headers[.authorization] else {
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
            ttl: request.headers[.init("TTL")!], urgency: request.headers[.init("Urgency")!], topic: request.headers[.init("Topic")!],
            contentEncoding: request.headers[.contentEncoding])
        let body = try await Self.readBody(request, limit: Self.maximumBodyCount)

        switch state.takeFault(for: id) {
        case nil: break
        case .gone?: throw .gone
        case .notFound?: throw .notFound
        case .tooLarge?: throw .payloadTooLarge
        case .tooManyRequests(let seconds, _)?: throw .tooManyRequests(retryAfterSeconds: seconds)
        case .serverError(let status, _)?: throw .serverError(status: status)
        case .reject(let status, let reason, _)?: throw MockWebPushRejection(status: status, reason: reason)
        case .delay(let duration, _)?: try? await Task.sleep(for: duration)
        }

        let bytes = Array(body.readableBytesView)
        var plaintext: [UInt8]?
        if decryptsMessages {
            do {
                plaintext = try WebPushEncryption.decrypt(bytes, privateKey: subscription.privateKey, authSecret: subscription.authSecret)
            } catch {
                logger.debug("push refused: the message does not decrypt as the browser would", metadata: ["error": "\(error.message)"])
                throw .decryptionFailed
            }
        }
        return MockWebPushMessage(
            subscriptionID: id, endpoint: subscription.endpoint, messageID: UUID().uuidString.lowercased(), plaintext: plaintext,
            bodyCount: bytes.count, ttl: headers.ttl, urgency: headers.urgency, topic: headers.topic, vapidSubject: vapid.claims.subject,
            vapidPublicKey: vapid.publicKey, httpVersion: httpVersion, receivedAt: Date())
    }

    // MARK: Reading and answering

    /// The body, refused with 413 past `limit` bytes (``MockHTTPSHost``'s bounded read).
    static func readBody(_ request: Request, limit: Int) async throws(MockWebPushRejection) -> ByteBuffer {
        do {
            return try await request.collectBody(limit: limit)
        } catch .tooLarge {
            throw .payloadTooLarge
        } catch {
            throw .badRequest
        }
    }

    /// `status` with `{"reason": …}` (and `Retry-After`).
    static func answer(_ rejection: MockWebPushRejection) -> Response {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.key("reason")
        writer.string(rejection.reason)
        writer.endObject()
        var headers: HTTPFields = [.contentType: "application/json"]
        if let seconds = rejection.retryAfterSeconds { headers[.retryAfter] = String(seconds) }
        return Response(status: HTTPResponse.Status(code: rejection.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: writer.bytes)))
    }

    private static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in generator.next() }
    }
}
