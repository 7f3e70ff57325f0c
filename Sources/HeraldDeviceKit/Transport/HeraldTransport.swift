import Foundation

/// What sends the kit's HTTP requests: ``URLSessionTransport`` unless the app or a test gives
/// another (one that records requests, or goes through the app's own networking stack).
public protocol HeraldTransport: Sendable {
    /// Sends `request` and returns the server's answer, whatever its status. Throws when no
    /// answer came (the kit keeps what it sent and tries again later).
    func send(_ request: HeraldRequest) async throws -> HeraldResponse
}

/// An HTTP request the kit makes.
public struct HeraldRequest: Sendable, Hashable {
    /// The HTTP methods the kit uses.
    public enum Method: String, Sendable, Hashable {
        /// Receipts: `POST /v1/receipts`.
        case post = "POST"
        /// Registrations: `PUT {backend}/{token}`.
        case put = "PUT"
    }

    /// The method.
    public var method: Method
    /// The full URL.
    public var url: URL
    /// Header fields by name.
    public var headers: [String: String]
    /// The body: JSON.
    public var body: Data

    /// A request to `url`.
    public init(method: Method, url: URL, headers: [String: String] = [:], body: Data = Data()) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// The server's answer to a ``HeraldRequest``.
public struct HeraldResponse: Sendable, Hashable {
    /// The HTTP status.
    public var status: Int
    /// Header fields, by lower-cased name.
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// An answer with `status`; header names are lower-cased.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }

    /// The value of the header field `name`, in any case.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}
