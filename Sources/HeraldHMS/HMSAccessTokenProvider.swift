import AsyncHTTPClient
import HeraldCore
import HeraldTransport
import Logging
import NIOCore
import Synchronization

/// The app's OAuth 2.0 access token for the Android API (v1), shared by every send: fetched from
/// Huawei's token endpoint with the client-credentials grant (`grant_type=client_credentials`,
/// `client_id`, `client_secret`, form-encoded; answer `access_token`, `expires_in`), reused until a
/// margin before its expiry (``BearerTokenCache``), and fetched by one request however many sends
/// need it at once: Huawei throttles apps asking for more than 1,000 tokens in 5 minutes
/// (https://developer.huawei.com/consumer/cn/doc/HMSCore-Guides/oauth2-0000001212610981).
/// A token Push Kit refuses is dropped with ``invalidate(_:)``.
public final class HMSAccessTokenProvider: Sendable {
    /// The app whose token it is.
    public let credentials: HMSAppCredentials
    /// The deadline of one token request.
    public let requestTimeout: Duration

    /// The longest token answer read: Huawei's is a few hundred bytes.
    public static let maximumAnswerCount = 64 << 10
    /// The longest access token used: it goes into every request's `Authorization` header.
    public static let maximumTokenCount = 8192
    /// A lifetime longer than a day is taken as a day.
    public static let maximumLifetime: Duration = .seconds(86400)

    private let http: HTTPClient
    private let endpoint: ServiceEndpoint
    private let logger: Logger
    private let clock = ContinuousClock()
    private let state = Mutex(State())
    private let requests = Atomic<Int>(0)

    private struct State: Sendable {
        var cache = BearerTokenCache()
        var fetch: Task<Result<String, HMSSendError>, Never>?
    }

    /// A provider fetching with `http` (HTTP/1.1 is enough; its TLS settings apply).
    public init(credentials: HMSAppCredentials, http: HTTPClient, requestTimeout: Duration = .seconds(30), logger: Logger) throws(HMSError) {
        guard let endpoint = ServiceEndpoint(credentials.tokenURI) else {
            throw HMSError(.invalidCredentials, "the token URI must be an https URL (http only to a loopback address)", field: "tokenURI")
        }
        self.credentials = credentials
        self.http = http
        self.endpoint = endpoint
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    /// Token requests made so far (sent, whatever their answer).
    public var tokenRequestCount: Int { requests.load(ordering: .relaxed) }

    /// A usable access token: the held one, or a fresh one (waiting for the one fetch under way).
    public func accessToken() async throws(HMSSendError) -> String {
        let now = clock.now
        let (action, fetch) = state.withLock { state -> (BearerTokenCache.Action, Task<Result<String, HMSSendError>, Never>?) in
            let action = state.cache.next(now: now)
            if case .use = action { return (action, nil) }
            if state.fetch == nil { state.fetch = startFetch() }
            return (action, state.fetch)
        }
        switch action {
        case .use(let token), .useAndRefresh(let token):
            return token
        case .wait:
            guard let fetch else { throw HMSSendError(.shutdown, reason: "no access token fetch") }
            return try await fetch.value.get()
        }
    }

    /// Drops `token` after Push Kit refused it: the next send waits for a fresh one.
    public func invalidate(_ token: String) {
        state.withLock { $0.cache.invalidate(token) }
    }

    /// Starts the one fetch; it stores its token and clears itself when done. Called with the lock held.
    private func startFetch() -> Task<Result<String, HMSSendError>, Never> {
        Task {
            let requested = clock.now
            let result: Result<(token: String, lifetime: Duration), HMSSendError>
            do throws(HMSSendError) {
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

    /// One token request: `POST` the token URI with the client credentials, form-encoded.
    private func fetch() async throws(HMSSendError) -> (token: String, lifetime: Duration) {
        var request = HTTPClientRequest(url: endpoint.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=client_credentials&client_id=" + Self.formEncoded(credentials.clientID) + "&client_secret="
            + Self.formEncoded(credentials.clientSecret)
        request.body = .bytes(ByteBuffer(string: form))
        requests.add(1, ordering: .relaxed)
        let status: Int
        let body: [UInt8]
        do {
            let response = try await http.execute(request, deadline: NIODeadline.now() + TimeAmount(requestTimeout), logger: logger)
            status = Int(response.status.code)
            var collected = try await response.body.collect(upTo: Self.maximumAnswerCount)
            body = collected.readBytes(length: collected.readableBytes) ?? []
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw HMSSendError(.timedOut, reason: "the token endpoint did not answer within \(requestTimeout)")
        } catch where TLSTrust.isUntrusted(error) {
            throw HMSSendError(.untrusted, reason: "token endpoint: " + TLSTrust.untrustedMessage(authority: endpoint.host))
        } catch {
            throw HMSSendError(.connectionFailed, reason: "token endpoint \(endpoint.host): \(PeerText(String(describing: error), limit: 200))")
        }
        let json = try? JSONValue(parsing: body)
        guard status == 200 else {
            // Huawei's refusal: {"error": 1101, "sub_error": 20003, "error_description": "…"}
            // (https://developer.huawei.com/consumer/en/doc/HMSCore-References/server-error-codes-0000001062371380).
            let parts = [json?["error"].map(Self.text), json?["sub_error"].map(Self.text), json?["error_description"].map(Self.text)].compactMap { $0 }
            let reason = parts.isEmpty ? "" : " " + PeerText(parts.joined(separator: " "), limit: 200).description
            logger.debug("access token refused", metadata: ["status": "\(status)"])
            // 429 and 5xx (503 is Huawei's rate limit) are the endpoint's trouble, worth a retry;
            // any other is the credentials'.
            throw HMSSendError(status == 429 || status >= 500 ? .connectionFailed : .tokenRefused, status: status, reason: "the token endpoint answered \(status)\(reason)")
        }
        guard let token = json?["access_token"]?.stringValue, !token.isEmpty, token.utf8.count <= Self.maximumTokenCount,
            token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw HMSSendError(.tokenRefused, status: status, reason: "the token endpoint's answer has no access_token usable in a header")
        }
        guard let seconds = json?["expires_in"]?.intValue, seconds > 0 else {
            throw HMSSendError(.tokenRefused, status: status, reason: "the token endpoint's answer has no positive whole-number expires_in")
        }
        logger.debug("access token fetched", metadata: ["expires_in": "\(seconds)"])
        return (token, min(.seconds(seconds), Self.maximumLifetime))
    }

    private static func text(_ value: JSONValue) -> String {
        value.stringValue ?? value.jsonString
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
                let digits = Array("0123456789ABCDEF".utf8)
                output += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// The service account's JWT for HarmonyOS NEXT's API (v3): signed here, no request, and reused
/// until a margin before its hour is up (Huawei advises reuse within the validity period).
final class HMSJWTSource: Sendable {
    let account: HMSServiceAccount
    private let clock = ContinuousClock()
    private let cache = Mutex(BearerTokenCache())
    private let signed = Atomic<Int>(0)

    init(account: HMSServiceAccount) {
        self.account = account
    }

    /// JWTs signed so far.
    var signedCount: Int { signed.load(ordering: .relaxed) }

    /// A usable JWT: the held one, or a freshly signed one.
    func token() throws(HMSSendError) -> String {
        let now = clock.now
        if case .use(let token) = cache.withLock({ $0.next(now: now) }) { return token }
        let jwt: String
        do {
            jwt = try HMSServiceAccountJWT.sign(for: account)
        } catch {
            throw HMSSendError(.tokenRefused, reason: error.message)
        }
        signed.add(1, ordering: .relaxed)
        cache.withLock { $0.store(jwt, lifetime: .seconds(HMSServiceAccountJWT.lifetime), requested: now) }
        return jwt
    }

    /// Push Kit refused `token`: the next send signs a fresh one.
    func invalidate(_ token: String) {
        cache.withLock { $0.invalidate(token) }
    }
}
