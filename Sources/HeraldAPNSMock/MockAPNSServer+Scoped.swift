@_spi(HeraldFlow) import HeraldFlow
import Logging
import NIOCore
import NIOPosix

/// Starts a mock APNs server, runs `body` with it, and always shuts it down afterwards, whether
/// `body` returned or threw.
///
/// ```swift
/// try await withMockAPNSServer { mock in
///     var configuration = APNSClient.Configuration(environment: mock.environment, credentials: .providerToken(key))
///     configuration.trustRoots = .only(mock.trustRoots)
///     …
/// }
/// ```
public func withMockAPNSServer<Result: Sendable>(
    configuration: MockAPNSServer.Configuration = MockAPNSServer.Configuration(),
    eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    logger: Logger = Logger(label: "herald.mock", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (MockAPNSServer) async throws -> Result
) async throws -> Result {
    let server = try MockAPNSServer(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger)
    try await server.start()
    return try await withShutdown(of: server, shutdown: { try? await $0.shutdown() }, body)
}
