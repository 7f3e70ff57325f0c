import HeraldCore
import HeraldFCM
import HeraldMockHTTP
import Logging
import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The mock FCM's routes: `POST /token` (the service account's OAuth token endpoint) and
/// `POST /v1/projects/{project}/messages:send`. Decoding and answering only; the checks are
/// `FCMAssertion.verify` and `FCMMessage.validate`, the tables ``MockFCMState``.
final class MockFCMRoutes: MockHTTPHandler {
    /// The longest `messages:send` body read (FCM's own limit is far above a 4 KB message).
    static let maximumBodyCount = 64 << 10
    /// The longest token request body read: an assertion is about 800 bytes.
    static let maximumTokenBodyCount = 32 << 10

    let state: MockFCMState
    private let accessTokenLifetime: Duration
    private let validatesMessages: Bool
    private let logger: Logger
    /// The service account whose assertions are accepted, set once the listener is bound
    /// (before any request is served): its `token_uri` names the port.
    private let accountBox = Mutex<FCMServiceAccount?>(nil)

    init(configuration: MockFCMServer.Configuration, logger: Logger) {
        state = MockFCMState(maximumRecords: configuration.maximumRecords)
        accessTokenLifetime = max(.seconds(1), configuration.accessTokenLifetime)
        validatesMessages = configuration.validatesMessages
        self.logger = logger
    }

    var account: FCMServiceAccount? {
        get { accountBox.withLock { $0 } }
        set { accountBox.withLock { $0 = newValue } }
    }

    // MARK: Routing

    func maximumBodyCount(method: String, path: String) -> Int {
        path == "/token" ? Self.maximumTokenBodyCount : Self.maximumBodyCount
    }

    /// `POST /token` and `POST /v1/projects/{project}/{method}`; anything else 404.
    func respond(to request: MockHTTPRequest) -> MockHTTPReply {
        guard request.method == "POST" else { return .now(.notFound(serving: Self.routes)) }
        // Nearly every request is a send, its path read here without splitting it (splitting
        // every path into an array of segments was 3.6 % of a benchmark's CPU); the same route
        // as the segments below give.
        if let project = Self.sendProject(request.path) { return send(request, project: project, method: "messages:send") }
        let segments = request.segments
        if segments.count == 1, segments[0] == "token" { return .now(token(request)) }
        if segments.count == 4, segments[0] == "v1", segments[1] == "projects" {
            return send(request, project: String(segments[2]), method: segments[3])
        }
        return .now(.notFound(serving: Self.routes))
    }

    /// The project of `/v1/projects/{project}/messages:send` (a project without `/`), or `nil`
    /// for any other path.
    static func sendProject(_ path: String) -> String? {
        let prefix = "/v1/projects/".utf8, suffix = "/messages:send".utf8
        let bytes = path.utf8
        guard bytes.count > prefix.count + suffix.count, bytes.starts(with: prefix), bytes.suffix(suffix.count).elementsEqual(suffix) else { return nil }
        let project = bytes.dropFirst(prefix.count).dropLast(suffix.count)
        guard !project.contains(UInt8(ascii: "/")) else { return nil }
        return String(Substring(project))
    }

    /// What the mock serves, as its 404 says.
    static let routes: StaticString = "POST /token and POST /v1/projects/{project}/messages:send"

    // MARK: The token endpoint

    /// `POST /token`, form-encoded `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and
    /// `assertion=<JWT>`: 200 `{"access_token", "expires_in", "token_type": "Bearer"}`, or 400
    /// `{"error", "error_description"}` (RFC 6749 §5.2) naming the failed check.
    private func token(_ request: MockHTTPRequest) -> MockHTTPResponse {
        state.countTokenRequest()
        guard let account else { return Self.oauthError("invalid_client", "the mock has no service account") }
        guard case .bytes(let body) = request.body else {
            return Self.oauthError("invalid_request", "the request body is over \(Self.maximumTokenBodyCount) bytes or unreadable")
        }
        let form = Self.formFields(String(decoding: body.readableBytesView, as: UTF8.self))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return Self.oauthError("unsupported_grant_type", "Invalid grant_type.")
        }
        guard let assertion = form["assertion"] else { return Self.oauthError("invalid_request", "Missing required parameter: assertion") }
        do {
            _ = try FCMAssertion.verify(
                assertion, publicKey: account.publicKey, issuer: account.clientEmail, keyID: account.privateKeyID,
                audiences: [account.tokenURI, FCMServiceAccount.googleTokenURI])
        } catch {
            logger.debug("token refused", metadata: ["error": "\(error.message)"])
            return Self.oauthError("invalid_grant", error.message)
        }
        var random = SystemRandomNumberGenerator()
        let token = "ya29.mock-" + Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
        state.issue(token, lifetime: accessTokenLifetime)
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        writer.key("access_token")
        writer.string(token)
        writer.key("expires_in")
        writer.int(Int(accessTokenLifetime.components.seconds))
        writer.key("token_type")
        writer.string("Bearer")
        writer.endObject()
        return MockHTTPResponse(status: 200, headers: [("content-type", "application/json; charset=utf-8")], body: writer.bytes)
    }

    private static func oauthError(_ error: String, _ description: String) -> MockHTTPResponse {
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        writer.key("error")
        writer.string(error)
        writer.key("error_description")
        writer.string(description)
        writer.endObject()
        return MockHTTPResponse(
            status: error == "invalid_client" ? 401 : 400, headers: [("content-type", "application/json; charset=utf-8")], body: writer.bytes)
    }

    /// `application/x-www-form-urlencoded` fields; the first of a repeated name wins.
    static func formFields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&").prefix(64) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecoded(parts[0]), fields[name] == nil else { continue }
            fields[name] = parts.count == 2 ? percentDecoded(parts[1]) : ""
        }
        return fields
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var output = [UInt8]()
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            switch byte {
            case UInt8(ascii: "+"): output.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = bytes.next().flatMap(hexValue), let low = bytes.next().flatMap(hexValue) else { return nil }
                output.append(high << 4 | low)
            default: output.append(byte)
            }
        }
        return String(validating: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    // MARK: messages:send

    /// `POST /v1/projects/{project}/messages:send`, checked in this order: the access token
    /// (401), the project (403), the body and the message's shape (400), scripted faults, an
    /// unregistered token (404); otherwise 200 `{"name": "projects/{project}/messages/{n}"}`.
    private func send(_ request: MockHTTPRequest, project: String, method: Substring) -> MockHTTPReply {
        state.countRequest()
        do {
            let (token, message) = try check(request, project: project, method: method)
            switch state.takeFault(for: token) {
            case nil:
                break
            case .delay(let duration, _)?:
                return .after(duration) { self.accept(token: token, message: message, project: project, httpVersion: request.httpVersion) }
            case .goAway?:
                state.countRejection("GOAWAY")
                return .goAway(otherwise: Self.goAwayOverHTTP1)
            case let fault?:
                throw Self.error(for: fault)
            }
            return .now(accept(token: token, message: message, project: project, httpVersion: request.httpVersion))
        } catch {
            return .now(answer(error))
        }
    }

    private struct ScriptedAnswer: Error {
        var status: Int
        var body: [UInt8]
    }

    /// Steps 1 to 4: the message (`null` and its token empty when messages are not validated).
    private func check(_ request: MockHTTPRequest, project: String, method: Substring) throws -> (token: String, message: JSONValue) {
        guard method == "messages:send" else { throw MockFCMRejection.notFound }
        guard let authorization = request.header("authorization"), authorization.hasPrefix("Bearer "),
            state.isValid(accessToken: String(Substring(authorization.utf8.dropFirst(7))))
        else {
            throw MockFCMRejection.unauthenticated
        }
        guard let account, project == account.projectID else { throw MockFCMRejection.permissionDenied(project: PeerText(project, limit: 64).description) }
        guard case .bytes(let body) = request.body else {
            throw MockFCMRejection(status: 400, message: "Request payload size exceeds the limit: \(Self.maximumBodyCount) bytes.", googleStatus: "INVALID_ARGUMENT")
        }
        guard validatesMessages else { return ("", .null) }
        guard let json = try? JSONValue(parsing: body.readableBytesView), let message = json["message"], message.objectValue != nil else {
            throw MockFCMRejection.badRequest(field: "message", description: "Invalid JSON payload received: the body must be {\"message\": {…}}")
        }
        do throws(FCMError) {
            try FCMMessage.validate(message)
        } catch let error where error.code == .invalidToken {
            throw MockFCMRejection.invalidToken
        } catch {
            throw MockFCMRejection.badRequest(field: error.field ?? "message", description: error.message)
        }
        return (message["token"]?.stringValue ?? "", message)
    }

    /// Step 6 and the answer: an unregistered token's 404, or the message recorded and named.
    private func accept(token: String, message: JSONValue, project: String, httpVersion: Int) -> MockHTTPResponse {
        if validatesMessages, state.isUnregistered(token) { return answer(MockFCMRejection.unregistered) }
        let number = state.record { number in
            MockFCMMessage(token: token, message: message, name: Self.messageName(project: project, number: number), httpVersion: httpVersion, receivedAt: Date())
        }
        var writer = JSONWriter(capacity: 96)
        writer.beginObject()
        writer.key("name")
        writer.string(Self.messageName(project: project, number: number))
        writer.endObject()
        return MockHTTPResponse(status: 200, headers: Self.jsonHeaders, body: writer.bytes)
    }

    /// FCM's name for accepted message `number`: `projects/{project}/messages/{number}`.
    static func messageName(project: String, number: Int) -> String {
        "projects/\(project)/messages/\(number)"
    }

    /// An answer's header fields: made once, not a list per answer.
    static let jsonHeaders = [(name: "content-type", value: "application/json; charset=UTF-8")]

    /// A refusal's answer, counted by its reason.
    private func answer(_ error: any Error) -> MockHTTPResponse {
        switch error {
        case let rejection as MockFCMRejection:
            state.countRejection(rejection.reason)
            logger.debug("message refused", metadata: ["status": "\(rejection.status)", "reason": "\(rejection.reason)"])
            var headers = Self.jsonHeaders
            if let seconds = rejection.retryAfterSeconds { headers.append(("retry-after", String(seconds))) }
            return MockHTTPResponse(status: rejection.status, headers: headers, body: rejection.body)
        case let answer as ScriptedAnswer:
            state.countRejection("scripted")
            return MockHTTPResponse(status: answer.status, body: answer.body)
        default:
            return MockHTTPResponse(status: 500)
        }
    }

    /// A GOAWAY fault's answer over HTTP/1.1, which has no GOAWAY: `UNAVAILABLE`, not processed,
    /// and the server means to close.
    static let goAwayOverHTTP1: MockHTTPResponse = {
        let rejection = MockFCMRejection.unavailable
        return MockHTTPResponse(
            status: rejection.status, headers: [("content-type", "application/json; charset=UTF-8"), ("connection", "close")], body: rejection.body)
    }()

    /// What a scripted fault other than a delay answers.
    private static func error(for fault: MockFCMFault) -> any Error {
        switch fault {
        case .unregistered: MockFCMRejection.unregistered
        case .invalidToken: MockFCMRejection.invalidToken
        case .senderIDMismatch: MockFCMRejection.senderIDMismatch
        case .thirdPartyAuthError: MockFCMRejection.thirdPartyAuthError
        case .quotaExceeded(let seconds, _): MockFCMRejection.quotaExceeded(retryAfterSeconds: seconds)
        case .unavailable: MockFCMRejection.unavailable
        case .internalError: MockFCMRejection.internal
        case .delay, .goAway: MockFCMRejection.internal  // handled before: not an answer of their own
        case .answer(let status, let body, _): ScriptedAnswer(status: (100...599).contains(status) ? status : 500, body: body)
        }
    }
}
