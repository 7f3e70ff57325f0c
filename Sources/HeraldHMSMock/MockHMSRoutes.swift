import HeraldCore
import HeraldHMS
import HeraldMockHTTP
import Logging
import NIOCore
import Synchronization

/// The mock Push Kit's routes: `POST /oauth2/v3/token` (client credentials),
/// `POST /v1/{clientid}/messages:send` and `POST /v3/{projectId}/messages:send`. Decoding and
/// answering only; the checks are HeraldHMS's own validation and JWT verification.
final class MockHMSRoutes: MockHTTPHandler {
    /// The longest send body read: 1,000 tokens of a few hundred bytes and a 4 KB message.
    static let maximumBodyCount = 512 << 10
    /// The longest token request body read.
    static let maximumTokenBodyCount = 8 << 10

    let state: MockHMSState
    private let accessTokenLifetime: Duration
    private let clientID: String
    private let account: HMSServiceAccount
    private let clientSecret: String
    private let validatesMessages: Bool
    private let logger: Logger

    init(configuration: MockHMSServer.Configuration, clientID: String, clientSecret: String, account: HMSServiceAccount, logger: Logger) {
        state = MockHMSState(maximumRecords: configuration.maximumRecords)
        accessTokenLifetime = max(.seconds(1), configuration.accessTokenLifetime)
        self.clientID = clientID
        self.clientSecret = clientSecret
        validatesMessages = configuration.validatesMessages
        self.account = account
        self.logger = logger
    }

    static let routes: StaticString = "POST /oauth2/v3/token, POST /v1/{clientid}/messages:send and POST /v3/{projectId}/messages:send"

    func maximumBodyCount(method: String, path: String) -> Int {
        path.hasPrefix("/oauth2/") ? Self.maximumTokenBodyCount : Self.maximumBodyCount
    }

    func respond(to request: MockHTTPRequest) -> MockHTTPReply {
        guard request.method == "POST" else { return .now(.notFound(serving: Self.routes)) }
        let segments = request.segments
        if segments == ["oauth2", "v3", "token"] { return .now(token(request)) }
        if segments.count == 3, segments[2] == "messages:send", segments[0] == "v1" || segments[0] == "v3" {
            return .now(send(request, version: segments[0] == "v1" ? 1 : 3, target: String(segments[1])))
        }
        return .now(.notFound(serving: Self.routes))
    }

    // MARK: The token endpoint

    /// `grant_type=client_credentials&client_id=…&client_secret=…`: 200 `{"access_token",
    /// "expires_in", "token_type": "Bearer"}`, or 400 `{"error": 1101, "sub_error", "error_description"}`
    /// as Huawei's account server answers (20002 a malformed client ID, 20003 an unknown one,
    /// 12304 a wrong secret, 20171 no secret).
    private func token(_ request: MockHTTPRequest) -> MockHTTPResponse {
        state.countTokenRequest()
        guard case .bytes(let body) = request.body else { return Self.oauthError(1101, 20001, "the request body is too large or unreadable") }
        let form = Self.formFields(String(decoding: body.readableBytesView, as: UTF8.self))
        guard form["grant_type"] == "client_credentials" else { return Self.oauthError(1101, 20182, "invalid grant_type") }
        guard let clientID = form["client_id"], (1...64).contains(clientID.utf8.count), clientID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return Self.oauthError(1101, 20002, "invalid client_id")
        }
        guard clientID == self.clientID else { return Self.oauthError(1101, 20003, "client_id does not exist") }
        guard let secret = form["client_secret"], !secret.isEmpty else { return Self.oauthError(1101, 20171, "client_secret is empty") }
        guard secret == clientSecret else { return Self.oauthError(1101, 12304, "invalid client_secret") }
        var random = SystemRandomNumberGenerator()
        let token = "DQEDA-mock" + Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
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
        return MockHTTPResponse(status: 200, headers: Self.jsonHeaders, body: writer.bytes)
    }

    private static func oauthError(_ error: Int, _ subError: Int, _ description: String) -> MockHTTPResponse {
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        writer.key("error")
        writer.int(error)
        writer.key("sub_error")
        writer.int(subError)
        writer.key("error_description")
        writer.string(description)
        writer.endObject()
        return MockHTTPResponse(status: 400, headers: jsonHeaders, body: writer.bytes)
    }

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

    /// Checked in this order, the first failure answered as Push Kit does
    /// (`{"code", "msg", "requestId"}`): the bearer (401 80200001, or 80200003 / 80200005 when
    /// expired), the client or project in the path (401 80200001 / 404), the `push-type` (v3, 400
    /// 80100001), the body (400 80100003, 80300010 for the token count, 80300008 over 4,096 bytes),
    /// scripted faults, then the tokens marked invalid: all of them 400 80300007, some 200
    /// 80100000 naming them; otherwise 200 80000000 and the message is recorded.
    private func send(_ request: MockHTTPRequest, version: Int, target: String) -> MockHTTPResponse {
        state.countRequest()
        let requestID = "mock\(state.requestCount)"
        func reply(_ status: Int, _ code: String, _ message: String, headers: [(name: String, value: String)] = MockHMSRoutes.jsonHeaders) -> MockHTTPResponse {
            if code != "80000000" { state.countRejection(code) }
            return MockHTTPResponse(status: status, headers: headers, body: Self.answer(code: code, message: message, requestID: requestID))
        }
        guard let authorization = request.header("authorization"), authorization.hasPrefix("Bearer ") else {
            return reply(401, "80200001", "Oauth authentication error")
        }
        let bearer = String(authorization.dropFirst(7))
        if version == 1 {
            switch state.accessTokenStatus(bearer) {
            case nil: return reply(401, "80200001", "Oauth authentication error")
            case false?: return reply(401, "80200003", "Oauth Token expired")
            case true?: break
            }
            guard target == clientID else { return reply(401, "80200001", "Oauth authentication error: the token is another client's") }
        } else {
            do {
                _ = try HMSServiceAccountJWT.verify(bearer, publicKey: account.publicKey, keyID: account.keyID, issuer: account.subAccount)
            } catch {
                logger.debug("jwt refused", metadata: ["error": "\(error.message)"])
                return error.message.hasSuffix("expired") ? reply(401, "80200005", "JWT expired") : reply(401, "80200001", "Oauth authentication error")
            }
            guard target == account.projectID else { return reply(404, "80100001", "Unknown project") }
        }
        guard case .bytes(let buffer) = request.body else { return reply(400, "80300008", "The message body size exceeds the default value") }
        guard validatesMessages else {
            var pushType: Int?
            if version == 3 {
                guard let header = request.header("push-type"), let type = Int(header), HMSHarmonyMessage.PushType(rawValue: type) != nil else {
                    return reply(400, "80100001", "Illegal push-type")
                }
                pushType = type
            }
            if let fault = state.takeFault() { return answer(fault, requestID: requestID) }
            state.record { _ in MockHMSMessage(apiVersion: version, tokens: [], pushType: pushType, body: [], requestID: requestID) }
            return reply(200, "80000000", "Success")
        }
        let body = Array(buffer.readableBytesView)
        guard let json = try? JSONValue(parsing: body) else { return reply(400, "80100003", "Illegal message body: not JSON") }
        let tokens: [String]
        let pushType: Int?
        do throws(HMSError) {
            if version == 1 {
                guard let message = json["message"] else { return reply(400, "80100003", "Illegal message body: no message") }
                try HMSAndroidMessage.validate(message)
                tokens = Self.tokens(message["token"])
                pushType = nil
            } else {
                guard let header = request.header("push-type"), let type = Int(header), HMSHarmonyMessage.PushType(rawValue: type) != nil else {
                    return reply(400, "80100001", "Illegal push-type")
                }
                try HMSHarmonyMessage.validate(json, pushType: type)
                tokens = Self.tokens(json["target"]?["token"])
                pushType = type
            }
        } catch {
            if error.code == .invalidToken {
                // The count, or the list's shape: 80300010; a malformed token: 80300007.
                if error.message.contains("at most") || error.message.contains("at least") || error.message.contains("array") {
                    return reply(400, "80300010", "The number of tokens in the message body exceeds the default value")
                }
                return reply(400, "80300007", #"{"failure":1,"illegal_tokens":[]}"#)
            }
            if error.message.contains("bytes") { return reply(400, "80300008", "The message body size exceeds the default value") }
            return reply(400, "80100003", "Illegal message: \(error.message)")
        }
        if let fault = state.takeFault() { return answer(fault, requestID: requestID) }
        let invalid = state.invalidTokens(among: tokens)
        if !invalid.isEmpty {
            let detail = Self.failureDetail(version: version, success: tokens.count - invalid.count, invalid: invalid)
            if invalid.count == tokens.count { return reply(400, "80300007", detail) }
            let sent = tokens.filter { !invalid.contains($0) }
            state.record { _ in MockHMSMessage(apiVersion: version, tokens: sent, pushType: pushType, body: body, requestID: requestID) }
            return reply(200, "80100000", detail)
        }
        state.record { _ in MockHMSMessage(apiVersion: version, tokens: tokens, pushType: pushType, body: body, requestID: requestID) }
        return reply(200, "80000000", "Success")
    }

    private func answer(_ fault: MockHMSFault, requestID: String) -> MockHTTPResponse {
        func retryHeaders(_ seconds: Int?) -> [(name: String, value: String)] {
            seconds.map { Self.jsonHeaders + [("retry-after", String($0))] } ?? Self.jsonHeaders
        }
        switch fault {
        case .rateLimited(let seconds, _):
            state.countRejection("429")
            return MockHTTPResponse(status: 429, headers: retryHeaders(seconds), body: Array(#"{"msg":"Too Many Requests"}"#.utf8))
        case .trafficControl(let seconds, _):
            state.countRejection("503")
            return MockHTTPResponse(status: 503, headers: retryHeaders(seconds), body: Self.answer(code: "503", message: "traffic control", requestID: requestID))
        case .internalError:
            state.countRejection("81000001")
            return MockHTTPResponse(status: 500, headers: Self.jsonHeaders, body: Self.answer(code: "81000001", message: "Internal error", requestID: requestID))
        case .badGateway:
            state.countRejection("502")
            return MockHTTPResponse(status: 502)
        case .answer(let status, let body, _):
            state.countRejection("scripted")
            return MockHTTPResponse(status: (100...599).contains(status) ? status : 500, body: body)
        }
    }

    /// The `msg` naming failed tokens: v1's `{"success", "failure", "illegal_tokens": […]}`, v3's
    /// `{"success", "failure", "illegalTokens": {"tokenFormatError": […]}}`.
    private static func failureDetail(version: Int, success: Int, invalid: [String]) -> String {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key("success")
        writer.int(success)
        writer.key("failure")
        writer.int(invalid.count)
        if version == 1 {
            writer.key("illegal_tokens")
            writer.strings(invalid)
        } else {
            writer.key("illegalTokens")
            writer.beginObject()
            writer.key("tokenFormatError")
            writer.strings(invalid)
            writer.endObject()
        }
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    private static func tokens(_ list: JSONValue?) -> [String] {
        guard case .array(let items)? = list else { return [] }
        return items.compactMap(\.stringValue)
    }

    static func answer(code: String, message: String, requestID: String) -> [UInt8] {
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        writer.key("code")
        writer.string(code)
        writer.key("msg")
        writer.string(message)
        writer.key("requestId")
        writer.string(requestID)
        writer.endObject()
        return writer.bytes
    }

    static let jsonHeaders = [(name: "content-type", value: "application/json;charset=UTF-8")]
}
