@_exported import HeraldMockCore
import Crypto
import HeraldCore
import HeraldIdentity
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A mock APNs server: real HTTP/2 over TLS, answering like APNs (apns-spec §1), with scripted
/// faults, counting and recording what it accepted so tests can prove what was delivered.
///
/// ```swift
/// let server = try MockAPNSServer(configuration: .init())
/// try await server.start()
/// // point an APNs client at server.url, trusting server.certificateAuthorityPEM
/// try await server.shutdown()
/// ```
public final class MockAPNSServer: Sendable {
    /// How the mock behaves.
    public struct Configuration: Sendable {
        /// Address to bind; loopback by default.
        public var host = "127.0.0.1"
        /// Port to bind; 0 picks a free one.
        public var port = 0
        /// The TLS certificate: `nil` makes one for 127.0.0.1, ::1 and localhost from a fresh CA.
        public var tlsIdentity: CertificateIdentity?
        /// SETTINGS_MAX_CONCURRENT_STREAMS sent to each client. Default 1000.
        public var maximumConcurrentStreams = 1000
        /// Answer like the development environment: with `apns-unique-id`.
        public var sandbox = false
        /// Provider-token keys by key ID, with their team (`nil`: any team). With none, any
        /// well-formed ES256 token is accepted without checking its signature.
        public var providerKeys: [String: (publicKey: P256.Signing.PublicKey, teamID: String?)] = [:]
        /// Require client certificates issued by these CAs (certificate authentication).
        public var clientCertificateAuthorities: [NIOSSLCertificate]?
        /// How many accepted and rejected notifications to keep for inspection (the counts are always exact).
        public var recordLimit = 10_000
        /// Faults and unregistered tokens.
        public var script = MockScript()
        /// The mock's clock, for provider-token expiry.
        public var now: @Sendable () -> Date = { Date() }
        /// What a client can make the mock hold or do: connections, timeouts, buffers, rates.
        public var limits = Limits()
        /// SO_SNDBUF of accepted connections (`nil`: the system's, autotuned): tests make it
        /// small so that a client that does not read fills it quickly.
        package var socketSendBufferSize: Int?

        public init() {}

        /// What a registered key may push to, by key ID; a key not listed may push anywhere.
        public var providerKeyScopes: [String: ProviderKeyScope] = [:]

        /// Registers a provider-token key: tokens with `kid` = `keyID` must verify with `publicKey`.
        public mutating func registerProviderKey(_ publicKey: P256.Signing.PublicKey, keyID: String, teamID: String?) {
            providerKeys[keyID] = (publicKey, teamID)
        }

        /// Registers a key scoped as Apple's keys may be since February 2025: to one environment,
        /// and/or to some topics. The mock refuses it elsewhere as APNs does.
        public mutating func registerProviderKey(_ publicKey: P256.Signing.PublicKey, keyID: String, teamID: String?, scope: ProviderKeyScope) {
            providerKeys[keyID] = (publicKey, teamID)
            providerKeyScopes[keyID] = scope
        }
    }

    /// Where a scoped provider key may push (apns-spec §2, "Key scoping"): a key for the other
    /// environment than the mock's answers 403 `BadEnvironmentKeyIdInToken`; a key pushing to a
    /// topic outside its list answers 400 `TopicDisallowed` (Apple does not document the reason for
    /// that case; this is the mock's choice, as the closest of APNs's reasons).
    public struct ProviderKeyScope: Sendable, Hashable {
        /// `true`: the sandbox only; `false`: production only; `nil`: both.
        public var sandbox: Bool?
        /// The bundle IDs it may push to (a push type's suffix included: `com.example.app.voip`
        /// is `com.example.app`'s); `nil`: any.
        public var topics: Set<String>?

        public init(sandbox: Bool? = nil, topics: Set<String>? = nil) {
            self.sandbox = sandbox
            self.topics = topics
        }

        /// Why the key may not push `topic` to a mock of this environment, or `nil`.
        func refusal(topic: String, sandbox mock: Bool) -> APNSReason? {
            if let sandbox, sandbox != mock { return .badEnvironmentKeyIdInToken }
            if let topics, !topics.contains(where: { topic == $0 || topic.hasPrefix($0 + ".") }) { return .topicDisallowed }
            return nil
        }
    }

    public let configuration: Configuration
    private let group: any EventLoopGroup
    private let logger: Logger
    private let state: MockServerState
    private let channels: MockChannelStore
    private let serverIdentity: CertificateIdentity
    /// The CA that issued the server's certificate, when the mock made it.
    public let certificateAuthority: MockCertificateAuthority?
    private let channel = Mutex<(any Channel)?>(nil)

    public init(
        configuration: Configuration = Configuration(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "herald.mock", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws {
        self.configuration = configuration
        self.group = eventLoopGroup
        self.logger = logger
        self.state = MockServerState(script: configuration.script, recordLimit: configuration.recordLimit, limits: configuration.limits)
        self.channels = MockChannelStore(maximumChannels: configuration.limits.maximumChannels)
        (serverIdentity, certificateAuthority) = try MockListener.identity(configuration.tlsIdentity)
    }

    /// Binds and starts serving.
    public func start() async throws {
        let sslContext = try MockListener.tlsContext(
            identity: serverIdentity, clientCertificateAuthorities: configuration.clientCertificateAuthorities, applicationProtocols: ["h2"]
        )
        let shared = MockConnectionHandler.Shared(
            state: state,
            channels: channels,
            validator: MockRequestValidator(
                verifier: MockTokenVerifier(keys: configuration.providerKeys), scopes: configuration.providerKeyScopes, sandbox: configuration.sandbox),
            sandbox: configuration.sandbox,
            mutualTLS: configuration.clientCertificateAuthorities != nil,
            maximumConcurrentStreams: configuration.maximumConcurrentStreams,
            limits: configuration.limits,
            now: configuration.now,
            logger: logger
        )
        let state = self.state
        let queued = max(configuration.limits.maximumQueuedResponseBytes, 1024)
        let sendBuffer = configuration.socketSendBufferSize
        let bound = try await MockListener.bind(host: configuration.host, port: configuration.port, group: group, sslContext: sslContext) { channel in
            guard state.admitConnection() else { throw MockListener.Refused() }
            channel.closeFuture.whenComplete { _ in state.connectionClosed() }
            // Stop reading from a client while answers it has not read pile up past the bound.
            _ = channel.setOption(.writeBufferWaterMark, value: .init(low: queued / 2, high: queued))
            if let sendBuffer { _ = channel.setOption(.socketOption(.so_sndbuf), value: SocketOptionValue(sendBuffer)) }
            try channel.pipeline.syncOperations.addHandler(BackPressureHandler())
            try channel.pipeline.syncOperations.addHandler(MockConnectionHandler(shared: shared))
        }
        channel.withLock { $0 = bound }
        logger.info("mock APNs listening", metadata: ["url": "\(url)"])
    }

    /// Stops listening and closes every connection.
    public func shutdown() async throws {
        let bound = channel.withLock { channel -> (any Channel)? in
            defer { channel = nil }
            return channel
        }
        try await bound?.close()
    }

    /// The port it listens on (after ``start()``).
    public var port: Int {
        channel.withLock { $0?.localAddress?.port } ?? configuration.port
    }

    /// `https://HOST:PORT`.
    public var url: String {
        "https://" + MockListener.authority(host: configuration.host, port: port)
    }

    /// Where clients send: a custom environment for this server.
    public var environment: APNSEnvironment { .custom(host: configuration.host, port: port) }

    /// The CA certificate clients must trust, as PEM (`nil` when a certificate was given).
    public var certificateAuthorityPEM: String? { certificateAuthority?.certificatePEM }

    /// The CA certificate clients must trust, for NIOSSL trust roots.
    public var trustRoots: [NIOSSLCertificate] {
        (try? certificateAuthority?.tlsCertificate).map { [$0] } ?? []
    }

    // MARK: Inspection

    /// Notifications accepted (exact, whatever the record limit).
    public var acceptedCount: Int { state.acceptedCount }
    /// Requests received (streams opened by clients).
    public var requestCount: Int { state.requestCount }
    /// Connections accepted.
    public var connectionCount: Int { state.connectionCount }
    /// Connections open now.
    public var openConnectionCount: Int { state.openConnectionCount }
    /// Bytes of requests held now over all connections (within ``Limits/maximumBufferedRequestBytes``).
    public var bufferedRequestBytes: Int { state.bufferedRequestBytes }
    /// The most bytes of answers one connection held for its client and the client had not taken:
    /// bodies waiting for flow-control window, and answers on the socket while the mock stopped
    /// reading (about ``Limits/maximumQueuedResponseBytes`` at most, plus the last answers written).
    public var peakQueuedResponseBytes: Int { state.peakQueuedResponseBytes }
    /// Distinct provider tokens clients have used (a token forgotten under
    /// ``Limits/maximumRememberedProviderTokens`` and used again counts twice).
    public var providerTokenCount: Int { state.providerTokenCount }
    /// Provider tokens remembered now (at most ``Limits/maximumRememberedProviderTokens``).
    public var rememberedProviderTokenCount: Int { state.rememberedProviderTokenCount }
    /// For each scripted stream limit: the most streams a client had open when a new one was
    /// accepted while that limit was in force. A client that follows SETTINGS stays within it.
    public var peakStreamsByLimit: [Int: Int] { state.peakStreamsByLimit }
    /// Broadcasts accepted.
    public var broadcastCount: Int { channels.broadcastCount }
    /// The IDs of an app's broadcast channels.
    public func channelIDs(bundleID: String) -> [String] { channels.list(bundleID: bundleID) }
    /// Streams refused with REFUSED_STREAM for going over the stream limit.
    public var refusedStreamCount: Int { state.refusedStreamCount }
    /// The latest accepted notifications, up to the record limit, oldest first.
    public var accepted: [AcceptedNotification] { state.acceptedRecords }
    /// The first rejected requests, up to the record limit.
    public var rejected: [RejectedNotification] { state.rejectedRecords }
    /// Rejections counted by reason.
    public var rejectionsByReason: [String: Int] { state.rejectedByReason }

    /// The current script.
    public var script: MockScript { state.script }

    // MARK: Waiting for the server to get somewhere

    /// Returns once the mock has received at least `count` requests.
    ///
    /// - Throws: ``MockWaitTimeout`` when it has not within `limit`, a safety net far above what
    ///   a working client needs, so a test waits on the server's state instead of sleeping.
    public func requests(atLeast count: Int, within limit: Duration = .seconds(30)) async throws {
        try await wait("requests received", current: { $0.requestCount }, until: { $0 >= count }, target: "at least \(count)", within: limit)
    }

    /// Returns once the mock has accepted at least `count` notifications; throws ``MockWaitTimeout`` after `limit`.
    public func accepted(atLeast count: Int, within limit: Duration = .seconds(30)) async throws {
        try await wait("notifications accepted", current: { $0.acceptedCount }, until: { $0 >= count }, target: "at least \(count)", within: limit)
    }

    /// Returns once at most `count` connections are open; throws ``MockWaitTimeout`` after `limit`.
    public func openConnections(atMost count: Int, within limit: Duration = .seconds(30)) async throws {
        try await wait("connections open", current: { $0.openConnectionCount }, until: { $0 <= count }, target: "at most \(count)", within: limit)
    }

    private func wait(
        _ what: String, current: (MockAPNSServer) -> Int, until done: (Int) -> Bool, target: String, within limit: Duration
    ) async throws {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while !done(current(self)) {
            if clock.now >= end { throw MockWaitTimeout(description: "\(what): \(current(self)) after \(limit), waiting for \(target)") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Changes the script while the server runs; connection events apply to new connections.
    public func updateScript(_ body: (inout MockScript) -> Void) {
        state.updateScript(body)
    }
}

/// A wait on the mock's state (``MockAPNSServer/requests(atLeast:within:)`` and the like) ran out of time.
public struct MockWaitTimeout: Error, Sendable, CustomStringConvertible {
    /// What was awaited and how far the mock got.
    public var description: String
}
