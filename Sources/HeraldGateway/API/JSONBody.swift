import HeraldCore
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// JSON bodies in and out of the API, with Herald's own writer and strict parser.
enum JSONBody {
    /// A JSON answer.
    static func response(_ status: HTTPResponse.Status, _ writer: JSONWriter, headers: HTTPFields = HTTPFields()) -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: writer.bytes)))
    }

    /// Writes an object with `body` and answers with it.
    static func object(_ status: HTTPResponse.Status = .ok, _ body: (inout JSONWriter) -> Void) -> Response {
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        body(&writer)
        writer.endObject()
        return response(status, writer)
    }

    /// The request's body as one JSON object, at most `limit` bytes.
    static func object(of request: Request, limit: Int) async throws -> JSONFields {
        guard let fields = try await optionalObject(of: request, limit: limit) else {
            throw APIError.invalid("the request body is empty; send a JSON object")
        }
        return fields
    }

    /// The request's body as one JSON object, or `nil` when it is empty.
    static func optionalObject(of request: Request, limit: Int) async throws -> JSONFields? {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw APIError(.contentTooLarge, "tooLarge", "the request body is over \(limit) bytes")
        } catch is NIOTooManyBytesError {
            throw APIError(.contentTooLarge, "tooLarge", "the request body is over \(limit) bytes")
        }
        guard buffer.readableBytesView.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else { return nil }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: buffer.readableBytesView)
        } catch {
            throw APIError.invalid("the body is not valid JSON: \(error)")
        }
        try InputScreen.refuseNUL(in: value)
        do {
            return try JSONFields(value, path: "")
        } catch {
            throw APIError.invalid("the body must be a JSON object")
        }
    }

    /// An ISO-8601 time with milliseconds, in UTC.
    static func time(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

extension JSONWriter {
    mutating func member(_ name: String, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    mutating func member(_ name: String, _ value: Int) {
        key(name)
        int(value)
    }

    mutating func member(_ name: String, _ date: Date?) {
        key(name)
        if let date { string(JSONBody.time(date)) } else { null() }
    }
}

extension FieldError {
    /// A field error as the API's 400 answer.
    var apiError: APIError { APIError.invalid(description) }
}
