import HeraldCore
import Hummingbird
import NIOCore

/// An error of the Matrix Push Gateway API, in the Matrix spec's shape
/// (`{"errcode": "M_BAD_JSON", "error": "…"}`, "API standards"), not the `/v1` API's: a
/// homeserver reads these.
struct MatrixError: Error, Sendable, CustomStringConvertible {
    var status: HTTPResponse.Status
    /// The Matrix error code (`M_BAD_JSON`, `M_NOT_JSON`, …).
    var errcode: String
    var message: String
    /// For `M_LIMIT_EXCEEDED`: when to try again, in milliseconds (`retry_after_ms`).
    var retryAfterMilliseconds: Int?

    init(_ status: HTTPResponse.Status, _ errcode: String, _ message: String) {
        self.status = status
        self.errcode = errcode
        self.message = message
    }

    /// The body is not JSON.
    static func notJSON(_ message: String) -> MatrixError { MatrixError(.badRequest, "M_NOT_JSON", message) }
    /// The body is JSON, but a field is missing or of the wrong type: the message names it.
    static func badJSON(_ message: String) -> MatrixError { MatrixError(.badRequest, "M_BAD_JSON", message) }
    /// The spec's answer for an endpoint this server does not serve.
    static func unrecognized(_ message: String) -> MatrixError { MatrixError(.notFound, "M_UNRECOGNIZED", message) }

    var description: String { "\(status.code) \(errcode): \(message)" }

    func response() -> Response {
        var writer = JSONWriter(capacity: 64 + message.utf8.count)
        writer.beginObject()
        writer.key("errcode")
        writer.string(errcode)
        writer.key("error")
        writer.string(message)
        if let retryAfterMilliseconds {
            writer.key("retry_after_ms")
            writer.int(retryAfterMilliseconds)
        }
        writer.endObject()
        var headers = HTTPFields()
        if let retryAfterMilliseconds { headers[.retryAfter] = String(max(1, (retryAfterMilliseconds + 999) / 1000)) }
        return JSONBody.response(status, writer, headers: headers)
    }

    /// Any error a notify request met, as the Matrix API answers it: the `/v1` API's status and
    /// message (a store that cannot be reached is a 503 the homeserver retries), with a Matrix code.
    static func from(_ error: any Error) -> (error: MatrixError, isInternal: Bool) {
        if let error = error as? MatrixError { return (error, false) }
        let (answer, isInternal) = APIError.from(error)
        let errcode: String = switch answer.status {
        case .contentTooLarge: "M_TOO_LARGE"
        case .tooManyRequests: "M_LIMIT_EXCEEDED"
        case .notFound: "M_NOT_FOUND"
        case .badRequest: "M_BAD_JSON"
        default: "M_UNKNOWN"
        }
        var matrix = MatrixError(answer.status, errcode, answer.message)
        matrix.retryAfterMilliseconds = answer.retryAfter.map { $0 * 1000 }
        return (matrix, isInternal)
    }
}
