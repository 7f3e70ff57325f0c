import NIOCore
import NIOHTTP1

/// Reads one answer at a time on an HTTP/1.1 connection: its status, `Location` and
/// `Retry-After`, and its body up to a bound. Past the bound, or on an answer nobody asked for,
/// the connection closes; a request's deadline closes it too.
final class HTTP1AnswerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let maximumBodyBytes: Int
    private var pending: EventLoopPromise<HTTPAnswer>?
    private var answer: HTTPAnswer?
    private var deadline: Scheduled<Void>?
    private var peer = ""

    init(maximumBodyBytes: Int) { self.maximumBodyBytes = maximumBodyBytes }

    /// The next answer completes `promise`; without one within `timeout` it fails and the
    /// connection closes. On the channel's event loop.
    func begin(_ promise: EventLoopPromise<HTTPAnswer>, timeout: TimeAmount, peer: String) {
        guard pending == nil else {
            promise.fail(HTTP1Error(.connectionLost, "the connection to \(peer) is busy"))
            return
        }
        pending = promise
        answer = nil
        self.peer = peer
        let loop = promise.futureResult.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop)
        deadline = loop.scheduleTask(in: timeout) {
            handler.value.fail(HTTP1Error(.timedOut, "\(peer) did not answer within \(Duration.nanoseconds(timeout.nanoseconds))", answerStarted: handler.value.answer != nil))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard pending != nil else {
                context.close(promise: nil)
                return
            }
            var started = HTTPAnswer(status: Int(head.status.code), location: head.headers.first(name: "location"), retryAfter: head.headers.first(name: "retry-after"), body: [])
            started.keepsConnection = head.isKeepAlive
            answer = started
        case .body(var buffer):
            guard var current = answer else { return }
            let room = maximumBodyBytes - current.body.count
            if buffer.readableBytes > room {
                current.body += buffer.readBytes(length: room) ?? []
                current.bodyTruncated = true
                current.keepsConnection = false
                answer = current
                finish()
                context.close(promise: nil)
                return
            }
            current.body += buffer.readBytes(length: buffer.readableBytes) ?? []
            answer = current
        case .end:
            finish()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(HTTP1Error(.connectionLost, "\(peer): \(error)", answerStarted: answer != nil))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(HTTP1Error(.connectionLost, "\(peer) closed the connection before answering in full", answerStarted: answer != nil))
        context.fireChannelInactive()
    }

    private func finish() {
        guard let promise = pending, let answer else { return }
        pending = nil
        self.answer = nil
        deadline?.cancel()
        promise.succeed(answer)
    }

    private func fail(_ error: HTTP1Error) {
        guard let promise = pending else { return }
        pending = nil
        answer = nil
        deadline?.cancel()
        promise.fail(error)
    }
}
