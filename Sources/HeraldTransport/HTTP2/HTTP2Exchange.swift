import HeraldHTTP2
import Logging
import NIOCore

/// A request the HTTP/2 pool carries, owned by the platform that made it (an APNs
/// notification, a Web Push message, an FCM message). The pool and its connections know a
/// request only through this protocol, as async-http-client's pool knows only its
/// `HTTPExecutableRequest`: they queue it, open a stream for it, have it write itself, and hand
/// its answer or failure to its platform's ``HTTP2Rules``.
///
/// A request is owned by one place at a time (the pool's queue, one connection's event loop, or
/// a retry timer) and handed over through the pool's lock, so its mutable state is never shared.
package protocol HTTP2Job: AnyObject, Sendable {
    /// Attempts so far, the one on the wire included: the connection counts one per stream opened.
    var attempts: Int { get set }
    /// When the current attempt times out: set when the request is queued, so the wait for a
    /// stream counts towards the request timeout.
    var deadline: NIODeadline { get set }
    /// The credential the last attempt carried (``HTTP2Rules/currentAuthorization()``), so its
    /// platform can renew exactly that one when the server refuses it.
    var authorization: HTTP2Authorization? { get set }
    var logger: Logger { get }

    /// Writes the request's HEADERS (and DATA) on `streamID`, with `connection`'s HPACK encoder.
    func write(streamID: HTTP2StreamNumber, on connection: inout HTTP2Connection, context: HTTP2WriteContext, into output: inout ByteBuffer)
}

/// One platform's rules over the pool: its credential, what an answer means, whether to try
/// again, and where finished requests go. One value per client, shared by its connections.
package protocol HTTP2Rules: Sendable {
    /// The credential every request written now carries, encoded once per generation by each
    /// connection; `nil` when the platform puts none on the connection (its requests carry their own).
    /// A credential that cannot be made fails the requests about to be written with the error.
    func currentAuthorization() throws(TransportError) -> HTTP2Authorization?

    /// State a connection keeps for this platform's requests (an encoder memo), handed to each
    /// request it writes (``HTTP2WriteContext/state``); `nil` for none.
    func makeConnectionState() -> AnyObject?

    /// What to do after an attempt of `job` ended. For ``HTTP2Verdict/done``, the rules record
    /// the final result in the job; ``finished(_:)`` delivers it later, with others.
    func judge(_ attempt: HTTP2Attempt, of job: any HTTP2Job) -> HTTP2Verdict

    /// `job` failed before or without an answer its rules could judge (no connection, no stream
    /// in time, no credential, shutdown): record the failure in it. ``finished(_:)`` follows.
    func fail(_ job: any HTTP2Job, _ error: TransportError)

    /// Requests that reached their final result (``judge(_:of:)`` said done, or ``fail(_:_:)``):
    /// deliver them to their callers, in one go per caller where the platform can.
    func finished(_ jobs: [any HTTP2Job])
}

/// A credential a platform puts on each request of a connection: `authorization: <value>`.
package struct HTTP2Authorization: Sendable, Hashable {
    /// Changes whenever ``value`` does: a connection encodes the field again only then.
    package var generation: Int
    /// The field's value (`bearer <JWT>`). Never logged.
    package var value: String

    package init(generation: Int, value: String) {
        self.generation = generation
        self.value = value
    }
}

/// What a request is written with, besides its connection.
package struct HTTP2WriteContext {
    /// `:authority`.
    package var authority: String
    /// The encoded `authorization` field of ``HTTP2Rules/currentAuthorization()``, if any.
    package var authorization: ByteBuffer?
    /// The connection's state for the platform (``HTTP2Rules/makeConnectionState()``).
    package var state: AnyObject?
}

/// How one attempt of a request ended.
package enum HTTP2Attempt {
    /// The server answered (a complete response).
    case answered(HTTP2Answer)
    /// The server did not process the request (REFUSED_STREAM, above a GOAWAY's last stream
    /// ID): safe to send again, elsewhere. The attempt is not counted against the request.
    case unprocessed
    /// The connection or stream failed before an answer: the request may or may not have been delivered.
    case lost(String)
    /// No answer before the request's deadline.
    case timedOut
}

/// What the pool does with a request after an attempt.
package enum HTTP2Verdict: Equatable {
    /// Its final result is recorded in it: deliver it.
    case done
    /// Send it again after `delay` (zero: at once, at the front of the queue). `avoidConnection`:
    /// the connection it was on takes no more work (the server asked for a fresh one).
    case retry(after: TimeAmount, avoidConnection: Bool)
}

/// A server's answer over HTTP/2 as it came: its status, its header fields (not the pseudo
/// ones; at most ``maximumFields``, each value made safe to print) and its body (at most
/// ``maximumBody`` bytes).
package struct HTTP2Answer: Sendable, Equatable {
    /// The most header fields kept of one answer; the rest are dropped (HeraldHTTP2 bounds the
    /// header list's size already; this bounds what is kept of it).
    package static let maximumFields = 16
    /// The most body bytes kept of one answer: push services answer with a short JSON error.
    package static let maximumBody = 16 << 10

    package var status: Int
    package var fields: [HTTP2Field]
    package var body: [UInt8]
    /// How long it took, from the request's stream opening to its end.
    package var latency: TimeAmount

    package init(status: Int, fields: [HTTP2Field] = [], body: [UInt8] = [], latency: TimeAmount = .zero) {
        self.status = status
        self.fields = fields
        self.body = body
        self.latency = latency
    }

    /// The value of the first field named `name` (lowercase, as HTTP/2 writes names).
    package subscript(_ name: String) -> String? {
        for field in fields where field.name == name { return field.value }
        return nil
    }

    /// The answer as the Web Push and FCM clients read it, whatever the protocol it came over.
    package var httpAnswer: HTTPAnswer {
        HTTPAnswer(status: status, location: self["location"], retryAfter: self["retry-after"], body: body)
    }
}

/// One header field of an answer.
package struct HTTP2Field: Sendable, Hashable {
    package var name: String
    package var value: String

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
