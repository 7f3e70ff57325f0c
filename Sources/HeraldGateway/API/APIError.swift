import HeraldCore
import HeraldStore
import Hummingbird
import NIOCore

/// An API error answer: `{"error": {"code": "…", "message": "…"}}` with its HTTP status.
///
/// Codes are stable (`unauthorized`, `forbidden`, `notFound`, `invalidRequest`, `tooLarge`,
/// `tooManyRequests`, `unavailable`, `storageFull`, `internal`, and APNs reasons such as `PayloadTooLarge` for payloads APNs would
/// refuse); messages say what was wrong and what to do.
public struct APIError: Error, Sendable, HTTPResponseError, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// Seconds for `Retry-After` (a 429 or 503 says when to come back).
    public var retryAfter: Int?

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    static func invalid(_ message: String) -> APIError { APIError(.badRequest, "invalidRequest", message) }
    static func notFound(_ message: String) -> APIError { APIError(.notFound, "notFound", message) }
    /// A 409: the app has no APNs credentials in the configuration; it reaches browsers only.
    static func apnsNotConfigured(_ app: String) -> APIError {
        APIError(
            .conflict, "apnsNotConfigured",
            "app '\(app)' has no APNs credentials (authKey or certificate) in the gateway's configuration: it reaches browsers only, whose subscriptions register at POST /v1/apps/\(app)/webpush/subscriptions"
        )
    }
    /// A 429 that says, in `Retry-After`, when to come back.
    static func tooManyRequests(_ message: String, retryAfter seconds: Int) -> APIError {
        var error = APIError(.tooManyRequests, "tooManyRequests", message)
        error.retryAfter = seconds
        return error
    }

    /// A 507: the database's disk is full, so nothing of the request was stored (what was
    /// accepted before is kept). `stored` says what of it was, when some was (an import's first
    /// batches). Retrying will not help until space is freed on the database's disk.
    static func storageFull(stored: String = "nothing of this request was stored") -> APIError {
        APIError(
            HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage"), "storageFull",
            "the database's disk is full: \(stored), and everything accepted before is kept; free space on the database's disk, then send it again"
        )
    }

    /// A 503: the database cannot be reached (down, restarting, unreachable); `stored` as for ``storageFull(stored:)``.
    static func unavailable(stored: String? = nil) -> APIError {
        APIError(.serviceUnavailable, "unavailable", "the database cannot be reached\(stored.map { ": \($0)" } ?? ""); try again shortly")
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    func response() -> Response {
        var writer = JSONWriter(capacity: 128 + message.utf8.count)
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.key("code")
        writer.string(code)
        writer.key("message")
        writer.string(message)
        writer.endObject()
        writer.endObject()
        var headers = HTTPFields()
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if let retryAfter {
            headers[.retryAfter] = String(retryAfter)
        } else if status == .serviceUnavailable {
            headers[.retryAfter] = "1"
        }
        return JSONBody.response(status, writer, headers: headers)
    }

    /// The answer for any error a route or Hummingbird threw. What a client sent wrong is said;
    /// what went wrong inside is logged and answered with a generic 500.
    static func from(_ error: any Error) -> (error: APIError, isInternal: Bool) {
        switch error {
        case let error as APIError:
            return (error, false)
        case let error as StoreError:
            switch error.code {
            case .unavailable:
                return (APIError.unavailable(), false)
            case .storageFull:
                // Logged: the operator must free space, and the log names the database and its error.
                return (APIError.storageFull(), true)
            case .invalidInput:
                return (APIError.invalid(error.message), false)
            case .notFound:
                return (APIError.notFound(error.message), false)
            case .conflict:
                return (APIError(.conflict, "conflict", error.message), false)
            default:
                return (APIError(.internalServerError, "internal", "the database answered with an error; it is logged"), true)
            }
        case let error as HTTPError:
            switch error.status {
            case .notFound: return (APIError.notFound("no such route; the API is described at GET /openapi.json"), false)
            case .methodNotAllowed: return (APIError(.methodNotAllowed, "methodNotAllowed", "this route does not take that method"), false)
            case .contentTooLarge: return (APIError(.contentTooLarge, "tooLarge", "the request body is too large"), false)
            case let status where status.code < 500:
                return (APIError(status, "invalidRequest", error.body ?? status.reasonPhrase), false)
            default:
                return (APIError(.internalServerError, "internal", "internal error; it is logged"), true)
            }
        case is NIOTooManyBytesError:
            return (APIError(.contentTooLarge, "tooLarge", "the request body is too large"), false)
        default:
            return (APIError(.internalServerError, "internal", "internal error; it is logged"), true)
        }
    }
}
