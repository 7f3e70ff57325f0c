import HeraldCore
import HeraldFCM
import HeraldMockHTTP
import Hummingbird
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
final class MockFCMRoutes: Sendable {
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

    func add(to router: Router<MockHTTPContext>) {
        router.post("token") { request, _ in await self.token(request) }
        router.post("v1/projects/:project/:method") { request, context in await self.send(request, context: context) }
    }

    // MARK: The token endpoint

    /// `POST /token`, form-encoded `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and
    /// `assertion=<JWT>`: 200 `{"access_token", "expires_in", "token_type": "Bearer"}`, or 400
    /// `{"error", "error_description"}` (RFC 6749 §5.2) naming the failed check.
    private func token(_ request: Request) async -> Response {
        state.countTokenRequest()
        guard let account else { return Self.oauthError("invalid_client", "the mock has no service account") }
        guard let body = try? await request.collectBody(limit: Self.maximumTokenBodyCount) else {
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
        return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: writer.bytes)))
    }

    private static func oauthError(_ error: String, _ description: String) -> Response {
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        writer.key("error")
        writer.string(error)
        writer.key("error_description")
        writer.string(description)
        writer.endObject()
        return Response(
            status: error == "invalid_client" ? .unauthorized : .badRequest, headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: writer.bytes)))
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
    private func send(_ request: Request, context: MockHTTPContext) async -> Response {
        state.countRequest()
        do {
            let message = try await accept(request, context: context)
            var writer = JSONWriter(capacity: 96)
            writer.beginObject()
            writer.key("name")
            writer.string(message.name)
            writer.endObject()
            return Response(status: .ok, headers: [.contentType: "application/json; charset=UTF-8"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: writer.bytes)))
        } catch let rejection as MockFCMRejection {
            state.countRejection(rejection.reason)
            logger.debug("message refused", metadata: ["status": "\(rejection.status)", "reason": "\(rejection.reason)"])
            var headers: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
            if let seconds = rejection.retryAfterSeconds { headers[.retryAfter] = String(seconds) }
            return Response(status: HTTPResponse.Status(code: rejection.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: rejection.body)))
        } catch let answer as ScriptedAnswer {
            state.countRejection("scripted")
            return Response(status: HTTPResponse.Status(code: answer.status), body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
        } catch {
            return Response(status: .internalServerError)
        }
    }

    private struct ScriptedAnswer: Error {
        var status: Int
        var body: [UInt8]
    }

    private func accept(_ request: Request, context: MockHTTPContext) async throws -> MockFCMMessage {
        guard context.parameters.get("method") == "messages:send", let project = context.parameters.get("project") else {
            throw MockFCMRejection.notFound
        }
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer "),
            state.isValid(accessToken: String(authorization.dropFirst(7)))
        else {
            throw MockFCMRejection.unauthenticated
        }
        guard let account, project == account.projectID else { throw MockFCMRejection.permissionDenied(project: PeerText(project, limit: 64).description) }
        guard let body = try? await request.collectBody(limit: Self.maximumBodyCount) else {
            throw MockFCMRejection(status: 400, message: "Request payload size exceeds the limit: \(Self.maximumBodyCount) bytes.", googleStatus: "INVALID_ARGUMENT")
        }
        guard validatesMessages else {
            if let fault = state.takeFault(for: "") { try await answer(fault) }
            return state.record { number in
                MockFCMMessage(token: "", message: .null, name: "projects/\(project)/messages/\(number)", httpVersion: context.httpVersion, receivedAt: Date())
            }
        }
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
        let token = message["token"]?.stringValue ?? ""
        if let fault = state.takeFault(for: token) { try await answer(fault) }
        if state.isUnregistered(token) { throw MockFCMRejection.unregistered }
        return state.record { number in
            MockFCMMessage(
                token: token, message: message, name: "projects/\(project)/messages/\(number)", httpVersion: context.httpVersion, receivedAt: Date())
        }
    }

    /// Throws what a scripted fault answers, or waits its delay.
    private func answer(_ fault: MockFCMFault) async throws {
        switch fault {
        case .unregistered: throw MockFCMRejection.unregistered
        case .invalidToken: throw MockFCMRejection.invalidToken
        case .senderIDMismatch: throw MockFCMRejection.senderIDMismatch
        case .thirdPartyAuthError: throw MockFCMRejection.thirdPartyAuthError
        case .quotaExceeded(let seconds, _): throw MockFCMRejection.quotaExceeded(retryAfterSeconds: seconds)
        case .unavailable: throw MockFCMRejection.unavailable
        case .internalError: throw MockFCMRejection.internal
        case .delay(let duration, _): try? await Task.sleep(for: duration)
        case .answer(let status, let body, _): throw ScriptedAnswer(status: (100...599).contains(status) ? status : 500, body: body)
        }
    }
}
