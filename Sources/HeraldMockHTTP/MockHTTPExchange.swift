import NIOCore
import NIOHPACK

/// A request a mock read whole, over HTTP/2 or HTTP/1.1: what its routes answer.
package struct MockHTTPRequest: Sendable {
    /// `POST`, `GET`, …
    package var method: String
    /// The path without its query.
    package var path: String
    /// The header fields, names in lower case (HTTP/2 pseudo-headers included there).
    package var headers: HPACKHeaders
    /// The body, or why it is missing.
    package var body: MockHTTPBody
    /// 1 (HTTP/1.1) or 2.
    package var httpVersion: Int

    package init(method: String, path: Substring, headers: HPACKHeaders, body: MockHTTPBody, httpVersion: Int) {
        self.method = method
        self.path = String(path.withoutQuery)
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    /// The first field named `name` (lower case).
    package func header(_ name: String) -> String? {
        headers.first(name: name)
    }

    /// The path's segments, empty ones left out: `/v1/projects/p` is `["v1", "projects", "p"]`.
    /// Split on the byte `/`: walking a path by `Character` (grapheme breaking for ASCII) was
    /// a few per cent of the mock's CPU per request under load.
    package var segments: [Substring] {
        path.utf8.split(separator: UInt8(ascii: "/"), maxSplits: MockHTTPRequest.maximumSegmentCount).map { Substring($0) }
    }

    /// Segments split off a path at most: no route has more, and a longer path ends in one long segment.
    static let maximumSegmentCount = 8
}

extension Substring {
    /// Up to the first `?`, found by byte rather than by `Character`.
    var withoutQuery: Substring {
        utf8.firstIndex(of: UInt8(ascii: "?")).map { self[..<$0] } ?? self
    }
}

/// A request's body as a mock read it.
package enum MockHTTPBody: Sendable {
    /// All of it, within the route's bound.
    case bytes(ByteBuffer)
    /// Past the route's bound (by `Content-Length` or by what arrived); the rest was not read.
    case tooLarge
    /// The body could not be read (the peer went away or broke the framing).
    case unreadable
}

/// A mock's answer: status, header fields (names in lower case) and body.
package struct MockHTTPResponse: Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// 404 for what the mock does not serve, with a JSON body naming what it does (Google's error
    /// shape). A body, as real servers give one: a client, or h2spec, reads it as DATA.
    package static func notFound(serving routes: StaticString) -> MockHTTPResponse {
        let body = #"{"error": {"code": 404, "message": "not found: this mock serves \#(routes)", "status": "NOT_FOUND"}}"#
        return MockHTTPResponse(status: 404, headers: [("content-type", "application/json")], body: Array(body.utf8))
    }
}

/// What a mock's routes give for a request: an answer now, or one made after a scripted delay
/// (the transport waits without holding a thread, then asks for it).
package enum MockHTTPReply: Sendable {
    case now(MockHTTPResponse)
    case after(Duration, @Sendable () -> MockHTTPResponse)
    /// Not processed: over HTTP/2 the connection ends with GOAWAY (`NO_ERROR`, the last stream
    /// ID the last one answered), so the peer sends this request again on another; HTTP/1.1
    /// has no GOAWAY, and answers `otherwise` there.
    case goAway(otherwise: MockHTTPResponse)
}

/// A mock's routes, called the same way by both transports (``MockHTTPSHost``'s HTTP/2 path and
/// Hummingbird's HTTP/1.1): a request read whole in, an answer out.
package protocol MockHTTPHandler: Sendable {
    /// The largest body read for `method` on `path`; past it the request's body is
    /// ``MockHTTPBody/tooLarge``.
    func maximumBodyCount(method: String, path: String) -> Int
    /// The answer to `request`. Called on an event loop for HTTP/2: it must not block for long.
    func respond(to request: MockHTTPRequest) -> MockHTTPReply
}
