import HeraldMockCore
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// A mock's HTTPS listener (the Web Push and FCM mocks'): TLS with a certificate from a mock CA,
/// HTTP/2 and HTTP/1.1 offered by ALPN (or HTTP/1.1 only), a bound on connections, and a
/// shutdown that never waits long. HTTP/2 is served by ``MockHTTP2Handler`` on HeraldHTTP2, fast
/// enough for a benchmark's mock; HTTP/1.1 by Hummingbird. Both hand each request to the same
/// ``MockHTTPHandler``.
package struct MockHTTPSHost: Sendable {
    /// The port it listens on.
    package let port: Int
    /// The CA that issued its certificate.
    package let authority: MockCertificateAuthority
    /// That CA's certificate, for clients' trust roots.
    package let certificate: NIOSSLCertificate
    /// What its HTTP/2 connections have seen.
    package let http2Counters: MockHTTP2Counters

    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Binds `host:port` (0: a free port), serves `handler`, and returns once it listens;
    /// `onListening` runs with the port before any request is served.
    package static func start(
        handler: any MockHTTPHandler, host: String, port: Int, offersHTTP2: Bool, maximumConnections: Int, issuer: MockCertificateAuthority?,
        authorityName: String, http2Limits: MockHTTP2Limits = MockHTTP2Limits(), logger: Logger,
        onListening: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> MockHTTPSHost {
        let authority = try issuer ?? MockCertificateAuthority(name: authorityName)
        let certificate = try authority.tlsCertificate
        let identity = try authority.issueServerIdentity()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.tlsCertificateChain.map { .certificate($0) }, privateKey: .privateKey(identity.tlsPrivateKey))
        tls.minimumTLSVersion = .tlsv12
        // A connection the mock closes gets a second to answer close_notify (NIOSSL's default
        // is 5 s, which a shutdown would wait out).
        tls.shutdownTimeout = .seconds(1)
        let http2Counters = MockHTTP2Counters()
        let http1 = HTTP1Channel.Configuration(idleTimeout: .seconds(300))
        let builder: HTTPServerBuilder
        if offersHTTP2 {
            tls.applicationProtocols = ["h2", "http/1.1"]
            let sslContext = try NIOSSLContext(configuration: tls)
            let counters = http2Counters
            builder = HTTPServerBuilder { responder in
                MockHTTPChannel(
                    sslContext: sslContext, http1: HTTP1Channel(responder: responder, configuration: http1), handler: handler, limits: http2Limits, counters: counters)
            }
        } else {
            tls.applicationProtocols = ["http/1.1"]
            builder = try .tls(.http1(configuration: http1), tlsConfiguration: tls)
        }
        let (bound, listening) = AsyncStream<Int>.makeStream()
        let application = Application(
            responder: MockHTTPResponder(handler: handler),
            server: builder,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), availableConnectionsDelegate: MaximumAvailableConnections(max(1, maximumConnections))),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                onListening(port)
                listening.yield(port)
            },
            logger: logger
        )
        let group = ServiceGroup(services: [application], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        let task = Task {
            defer { listening.finish() }
            try await group.run()
        }
        var ports = bound.makeAsyncIterator()
        guard let listened = await ports.next() else {
            // The service stopped (its error is thrown here), or the caller was cancelled.
            task.cancel()
            try await task.value
            throw MockHTTPSHostError(description: "stopped before it listened on \(host):\(port)")
        }
        return MockHTTPSHost(port: listened, authority: authority, certificate: certificate, http2Counters: http2Counters, group: group, task: task)
    }

    /// Stops listening and closes every connection: gracefully (HTTP/2 GOAWAY, idle HTTP/1.1
    /// connections closed), and after two seconds whatever is left.
    package func shutdown() async throws {
        await group.triggerGracefulShutdown()
        let task = self.task
        await withTaskGroup(of: Void.self) { waits in
            waits.addTask { _ = try? await task.value }
            waits.addTask {
                try? await Task.sleep(for: .seconds(2))
                task.cancel()
            }
            await waits.next()
            waits.cancelAll()
        }
        do {
            try await task.value
        } catch is CancellationError {
        }
    }
}

/// A mock's listener could not start.
package struct MockHTTPSHostError: Error, Sendable, CustomStringConvertible {
    package var description: String
}
