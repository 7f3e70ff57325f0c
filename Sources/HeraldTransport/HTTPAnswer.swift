/// What a server answered to a request sent through Herald's transport, whatever its status,
/// over HTTP/2 or HTTP/1.1: what the Web Push and FCM clients decide on (an APNs notification's
/// answer is its ``APNSResponse``).
package struct HTTPAnswer: Sendable, Hashable {
    package var status: Int
    /// `Location`: a Web Push message's resource at its push service (RFC 8030 §5).
    package var location: String?
    /// `Retry-After`, as the server wrote it.
    package var retryAfter: String?
    /// The body, at most the transport's bound for answers.
    package var body: [UInt8]
    /// The body went past the bound: ``body`` is its start.
    package var bodyTruncated = false
    /// HTTP/1.1: the connection may carry the next request (keep-alive, the answer read to its end).
    var keepsConnection = false

    package init(status: Int, location: String? = nil, retryAfter: String? = nil, body: [UInt8]) {
        self.status = status
        self.location = location
        self.retryAfter = retryAfter
        self.body = body
    }
}
