import AsyncHTTPClient
import HeraldCore
import HeraldTransport
import Logging
import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The service account's OAuth 2.0 access token, shared by every send: fetched from the
/// account's `token_uri` with a signed assertion (the JWT-bearer grant, RFC 7523), reused until a
/// margin before its `expires_in` (``BearerTokenCache``), and fetched by one request however many
/// sends need it at once. A token FCM refuses with 401 is dropped with ``invalidate(_:)``.
public final class FCMAccessTokenProvider: Sendable {
    /// The account whose token it is.
    public let serviceAccount: FCMServiceAccount
    /// The deadline of one token request.
    public let requestTimeout: Duration

    /// The longest token answer read: Google's is about 1.2 KB.
    public static let maximumAnswerCount = 64 << 10
    /// The longest access token used: it goes into every request's `Authorization` header.
    public static let maximumTokenCount = 8192
    /// A lifetime longer than a day is taken as a day.
    public static let maximumLifetime: Duration = .seconds(86400)
    /// The JWT-bearer grant (RFC 7523 §2.1).
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    private let http: HTTPClient
    private let endpoint: ServiceEndpoint
    private let logger: Logger
    private let clock = ContinuousClock()
    private let state = Mutex(State())
    private let requests = Atomic<Int>(0)

    private struct State: Sendable {
        var cache = BearerTokenCache()
        /// The fetch under way, that every send needing a token waits for.
        var fetch: Task<Result<String, FCMSendError>, Never>?
    }

    /// A provider fetching with `http` (HTTP/1.1 is enough; its TLS settings apply).
    public init(serviceAccount: FCMServiceAccount, http: HTTPClient, requestTimeout: Duration = .seconds(30), logger: Logger) throws(FCMError) {
        guard let endpoint = ServiceEndpoint(serviceAccount.tokenURI) else {
            throw FCMError(.invalidServiceAccount, "the service account's token_uri must be an https URL (http only to a loopback address)")
        }
        self.serviceAccount = serviceAccount
        self.http = http
        self.endpoint = endpoint
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    /// Token requests made so far (sent, whatever their answer).
    public var tokenRequestCount: Int { requests.load(ordering: .relaxed) }

    /// A usable access token: the held one, or a fresh one (waiting for the one fetch under way).
    ///
    /// Throws ``FCMSendError`` with ``FCMSendError/Code/tokenRefused`` when the token endpoint
    /// refused the account (not worth retrying), ``FCMSendError/Code/connectionFailed`` or
    /// ``FCMSendError/Code/timedOut`` when it could not answer (worth retrying).
    public func accessToken() async throws(FCMSendError) -> String {
        let now = clock.now
        let (action, fetch) = state.withLock { state -> (BearerTokenCache.Action, Task<Result<String, FCMSendError>, Never>?) in
            let action = state.cache.next(now: now)
            if case .use = action { return (action, nil) }
            if state.fetch == nil { state.fetch = startFetch() }
            return (action, state.fetch)
        }
        switch action {
        case .use(let token), .useAndRefresh(let token):
            return token
        case .wait:
            guard let fetch else { throw FCMSendError(.shutdown, reason: "no access token fetch") }
            return try await fetch.value.get()
        }
    }

    /// Drops `token` after FCM refused it (401): the next send waits for a fresh one. A newer
    /// token is kept.
    public func invalidate(_ token: String) {
        state.withLock { $0.cache.invalidate(token) }
    }

    /// Starts the one fetch; it stores its token and clears itself when done. Called with the lock held.
    private func startFetch() -> Task<Result<String, FCMSendError>, Never> {
        Task {
            let requested = clock.now
            let result: Result<(token: String, lifetime: Duration), FCMSendError>
            do throws(FCMSendError) {
                result = .success(try await fetch())
            } catch {
                result = .failure(error)
            }
            state.withLock { state in
                if case .success(let fetched) = result { state.cache.store(fetched.token, lifetime: fetched.lifetime, requested: requested) }
                state.fetch = nil
            }
            return result.map(\.token)
        }
    }

    /// One token request: `POST token_uri` with `grant_type` and `assertion`, form-encoded.
    private func fetch() async throws(FCMSendError) -> (token: String, lifetime: Duration) {
        let assertion: String
        do {
            assertion = try FCMAssertion.sign(for: serviceAccount)
        } catch {
            throw FCMSendError(.tokenRefused, reason: error.message)
        }
        var request = HTTPClientRequest(url: endpoint.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=" + Self.formEncoded(Self.grantType) + "&assertion=" + Self.formEncoded(assertion)
        request.body = .bytes(ByteBuffer(string: form))
        requests.add(1, ordering: .relaxed)
        let status: Int
        let body: [UInt8]
        do {
            let deadline = NIODeadline.now() + TimeAmount(requestTimeout)
            let response = try await http.execute(request, deadline: deadline, logger: logger)
            status = Int(response.status.code)
            var collected = try await response.body.collect(upTo: Self.maximumAnswerCount)
            body = collected.readBytes(length: collected.readableBytes) ?? []
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw FCMSendError(.timedOut, reason: "the token endpoint did not answer within \(requestTimeout)")
        } catch where TLSTrust.isUntrusted(error) {
            throw FCMSendError(.untrusted, reason: "token endpoint: " + TLSTrust.untrustedMessage(authority: endpoint.host))
        } catch {
            throw FCMSendError(.connectionFailed, reason: "token endpoint \(endpoint.host): \(PeerText(String(describing: error), limit: 200))")
        }
        let json = try? JSONValue(parsing: body)
        guard status == 200 else {
            // OAuth's error answer (RFC 6749 §5.2): {"error": "invalid_grant", "error_description": …}.
            let reason = [json?["error"]?.stringValue, json?["error_description"]?.stringValue].compactMap { $0 }.joined(separator: ": ")
            let text = reason.isEmpty ? "the token endpoint answered \(status)" : "the token endpoint answered \(status) \(PeerText(reason, limit: 200))"
            logger.debug("access token refused", metadata: ["status": "\(status)"])
            // 429 and 5xx are the endpoint's trouble, worth a retry; any other is the account's.
            throw FCMSendError(status == 429 || status >= 500 ? .connectionFailed : .tokenRefused, status: status, reason: text)
        }
        guard let token = json?["access_token"]?.stringValue, !token.isEmpty, token.utf8.count <= Self.maximumTokenCount,
            token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw FCMSendError(.tokenRefused, status: status, reason: "the token endpoint's answer has no access_token usable in a header")
        }
        guard let seconds = json?["expires_in"]?.intValue, seconds > 0 else {
            throw FCMSendError(.tokenRefused, status: status, reason: "the token endpoint's answer has no positive whole-number expires_in")
        }
        logger.debug("access token fetched", metadata: ["expires_in": "\(seconds)"])
        return (token, min(.seconds(seconds), Self.maximumLifetime))
    }

    /// `application/x-www-form-urlencoded`: unreserved characters as they are, the rest as %XX.
    static func formEncoded(_ text: String) -> String {
        var output = [UInt8]()
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
                UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                output.append(byte)
            default:
                output.append(UInt8(ascii: "%"))
                output.append(hexDigit(byte >> 4))
                output.append(hexDigit(byte & 0x0F))
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }
}
