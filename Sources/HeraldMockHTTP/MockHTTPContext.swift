import Hummingbird

/// A mock's request context: Hummingbird's, and the HTTP version the request came on.
package struct MockHTTPContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// 1 (HTTP/1.1) or 2.
    package let httpVersion: Int

    package init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        // An HTTP/2 stream's channel is a child of its connection's, itself a child of the
        // listener's; an HTTP/1.1 request comes on the connection's channel.
        httpVersion = source.channel.parent?.parent == nil ? 1 : 2
    }
}

/// A request body over a mock's limit, or one that could not be read.
package enum MockBodyError: Error, Sendable {
    case tooLarge
    case unreadable
}

extension Request {
    /// The body, refused past `limit` bytes: by `Content-Length` before reading when it is
    /// given, and never holding more than `limit` bytes whatever the peer sends.
    package func collectBody(limit: Int) async throws(MockBodyError) -> ByteBuffer {
        if let declared = headers[.contentLength], let length = Int(declared), length > limit { throw .tooLarge }
        var collected = ByteBuffer()
        do {
            for try await var part in body {
                guard collected.readableBytes + part.readableBytes <= limit else { throw MockBodyError.tooLarge }
                collected.writeBuffer(&part)
            }
        } catch let error as MockBodyError {
            throw error
        } catch {
            throw .unreadable
        }
        return collected
    }
}
