@_spi(HeraldFlow) import HeraldFlow
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A small HTTP/1.1 client with keep-alive connections per origin, for the push services that
/// do not speak HTTP/2 (a Web Push service that refuses `h2` by ALPN). It knows requests, not
/// platforms. Every connection goes through a ``ConnectGuard`` before its connect call, answers
/// are read up to a bound, and each request has a deadline.
package final class HTTP1Client: Sendable {
    package struct Configuration: Sendable {
        /// Connections kept per origin: at most this many requests to one origin at once.
        package var connectionsPerOrigin = 8
        /// The deadline for TCP and TLS.
        package var connectTimeout: Duration = .seconds(10)
        /// The deadline of each request, from writing it to its answer's end.
        package var requestTimeout: Duration = .seconds(30)
        /// How long a kept connection may sit unused before it is closed.
        package var idleTimeout: Duration = .seconds(60)
        /// The longest answer body kept; past it the rest is not read and the connection closes.
        package var maximumBodyBytes = 8192
        /// Certificates to trust besides the system's.
        package var additionalTrustRoots: [NIOSSLCertificate] = []
        /// Decides, per resolved address, whether a connection may be opened.
        package var connectGuard: ConnectGuard?

        package init() {}
    }

    /// Origins with connections or limiters kept at once: the table a caller's endpoints grow.
    package static let maximumOrigins = 256

    private struct Origin {
        let limiter: InFlightLimiter
        var idle: [any Channel] = []
    }

    private let configuration: Configuration
    private let group: any EventLoopGroup
    /// Made once; a configuration that cannot be built fails each HTTPS connection with its reason.
    private let tls: Result<NIOSSLContext, HTTP1Error>
    private let origins = Mutex<[String: Origin]>([:])
    private let isShutDown = Atomic<Bool>(false)

    package init(configuration: Configuration, eventLoopGroup: any EventLoopGroup) {
        self.configuration = configuration
        self.group = eventLoopGroup
        var tls = TLSConfiguration.makeClientConfiguration()
        if !configuration.additionalTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(configuration.additionalTrustRoots)] }
        tls.applicationProtocols = ["http/1.1"]
        do {
            self.tls = .success(try NIOSSLContext(configuration: tls))
        } catch {
            self.tls = .failure(HTTP1Error(.connectionFailed, "the TLS configuration could not be built: \(error)"))
        }
    }

    /// Sends one request and returns its answer, whatever its status. `headers` are sent as
    /// given, after `Host`.
    package func exchange(
        https: Bool, host: String, port: Int, method: HTTPMethod, target: String, headers: [(name: String, value: String)], body: [UInt8]
    ) async throws(HTTP1Error) -> HTTPAnswer {
        guard !isShutDown.load(ordering: .relaxed) else { throw HTTP1Error(.shutdown, "the client was shut down") }
        let key = "\(https ? "https" : "http")://\(host):\(port)"
        let limiter = self.limiter(for: key)
        do {
            _ = try await limiter.acquire()
        } catch {
            throw HTTP1Error(.shutdown, "cancelled while waiting for a connection to \(host)")
        }
        defer { limiter.release() }
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: target)
        head.headers.add(name: "Host", value: port == (https ? 443 : 80) ? host : "\(host):\(port)")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        if !headers.contains(where: { $0.name.lowercased() == "content-length" }) { head.headers.add(name: "Content-Length", value: String(body.count)) }
        // A kept connection the server closed while it was idle loses the request before any
        // answer: sent again once, on a new connection.
        var (channel, reused) = try await connection(key: key, https: https, host: host, port: port)
        while true {
            do {
                let answer = try await send(head: head, body: body, on: channel, host: host)
                if answer.keepsConnection, channel.isActive, !isShutDown.load(ordering: .relaxed) {
                    keep(channel, for: key)
                } else {
                    channel.close(promise: nil)
                }
                return answer
            } catch {
                channel.close(promise: nil)
                guard reused, error.code == .connectionLost, !error.answerStarted else { throw error }
                (channel, reused) = try await connection(key: key, https: https, host: host, port: port, reuse: false)
            }
        }
    }

    /// Keeps `channel` for the origin's next request; closed if it is still unused after the idle timeout.
    private func keep(_ channel: any Channel, for key: String) {
        origins.withLock { $0[key]?.idle.append(channel) }
        channel.eventLoop.scheduleTask(in: TimeAmount(configuration.idleTimeout)) { [weak self] in
            let removed = self?.origins.withLock { origins -> Bool in
                guard let index = origins[key]?.idle.firstIndex(where: { $0 === channel }) else { return false }
                origins[key]?.idle.remove(at: index)
                return true
            }
            if removed == true { channel.close(promise: nil) }
        }
    }

    /// Writes one request on `channel` and waits for its answer.
    private func send(head: HTTPRequestHead, body: [UInt8], on channel: any Channel, host: String) async throws(HTTP1Error) -> HTTPAnswer {
        let promise = channel.eventLoop.makePromise(of: HTTPAnswer.self)
        let timeout = TimeAmount(configuration.requestTimeout)
        let peer = self.host(host)
        channel.eventLoop.execute {
            guard channel.isActive, let handler = try? channel.pipeline.syncOperations.handler(type: HTTP1AnswerHandler.self) else {
                promise.fail(HTTP1Error(.connectionLost, "the connection to \(peer) closed before the request"))
                return
            }
            handler.begin(promise, timeout: timeout, peer: peer)
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            if !body.isEmpty { channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil) }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        do {
            // Cancelled (a gateway's grace period ending): the connection closes, which ends the wait.
            return try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                channel.close(promise: nil)
            }
        } catch let error as HTTP1Error {
            throw error
        } catch {
            throw HTTP1Error(.connectionLost, "\(peer): \(error)")
        }
    }

    /// Origins the client keeps a limiter (and maybe idle connections) for: at most ``maximumOrigins``.
    package var originCount: Int { origins.withLock { $0.count } }

    /// Closes every kept connection; later exchanges fail with ``HTTP1Error/Code/shutdown``.
    package func shutdown() async {
        guard !isShutDown.exchange(true, ordering: .relaxed) else { return }
        let channels = origins.withLock { origins in
            defer { origins.removeAll() }
            return origins.values.flatMap(\.idle)
        }
        for channel in channels { try? await channel.close() }
    }

    /// The origin's limiter, made on first use. Past ``maximumOrigins``, origins with nothing in
    /// flight are forgotten and their idle connections closed.
    private func limiter(for key: String) -> InFlightLimiter {
        let (limiter, closing) = origins.withLock { origins -> (InFlightLimiter, [any Channel]) in
            if let known = origins[key] { return (known.limiter, []) }
            var closing: [any Channel] = []
            if origins.count >= Self.maximumOrigins {
                for (other, origin) in origins where origin.limiter.available == origin.limiter.limit {
                    closing += origin.idle
                    origins[other] = nil
                }
            }
            let limiter = InFlightLimiter(limit: max(1, configuration.connectionsPerOrigin))
            origins[key] = Origin(limiter: limiter)
            return (limiter, closing)
        }
        for channel in closing { channel.close(promise: nil) }
        return limiter
    }

    /// An idle connection to the origin that is still open, or a new one.
    private func connection(key: String, https: Bool, host: String, port: Int, reuse: Bool = true) async throws(HTTP1Error) -> (any Channel, reused: Bool) {
        while reuse, let idle = origins.withLock({ $0[key]?.idle.popLast() }) {
            if idle.isActive { return (idle, true) }
        }
        let serverName = IPAddressText.isAddress(host) ? nil : host
        let tls: NIOSSLContext? = https ? try self.tls.get() : nil
        let connectGuard = configuration.connectGuard
        let maximumBody = configuration.maximumBodyBytes
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let connectGuard { try sync.addHandler(ConnectGuardHandler(host: host, connectGuard)) }
                    if let tls { try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName)) }
                    try sync.addHTTPClientHandlers(leftOverBytesStrategy: .dropBytes)
                    try sync.addHandler(HTTP1AnswerHandler(maximumBodyBytes: maximumBody))
                }
            }
        do {
            return (try await bootstrap.connect(host: self.host(host), port: port).get(), false)
        } catch {
            if let refused = ConnectionNotAllowed.find(in: error) { throw HTTP1Error(.addressNotAllowed, refused.reason) }
            throw HTTP1Error(.connectionFailed, "cannot connect to \(host):\(port): \(error)")
        }
    }

    /// A host as the resolver and the bootstrap take it: an IPv6 literal without its brackets.
    private func host(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}

/// Why an HTTP/1.1 exchange got no answer.
package struct HTTP1Error: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// No connection could be made: refused, unreachable, DNS, TLS.
        package static let connectionFailed = Code(name: "connectionFailed")
        /// The guard refused every address the name resolved to; no packet was sent.
        package static let addressNotAllowed = Code(name: "addressNotAllowed")
        /// The connection closed or broke before the answer's end.
        package static let connectionLost = Code(name: "connectionLost")
        /// No complete answer within the request's deadline.
        package static let timedOut = Code(name: "timedOut")
        /// The client was shut down.
        package static let shutdown = Code(name: "shutdown")
        package var description: String { name }
    }

    package var code: Code
    package var message: String
    /// Part of an answer had come when the connection was lost (so the request was read).
    package var answerStarted = false

    package init(_ code: Code, _ message: String, answerStarted: Bool = false) {
        self.code = code
        self.message = message
        self.answerStarted = answerStarted
    }

    package var description: String { "\(code): \(message)" }
}
