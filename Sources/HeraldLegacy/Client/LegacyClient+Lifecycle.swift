@_spi(HeraldFlow) import HeraldFlow
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

extension LegacyClient: Service {
    /// Runs until graceful shutdown is signalled, then writes what is batched, waits for every
    /// outcome and closes.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}

/// Runs `body` with a new legacy client and always shuts it down afterwards, waiting for the
/// outcome of everything sent.
public func withLegacyClient<Result: Sendable>(
    configuration: LegacyClient.Configuration,
    eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    logger: Logger = Logger(label: "herald.legacy", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (LegacyClient) async throws -> Result
) async throws -> Result {
    let client = try LegacyClient(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger)
    return try await withShutdown(of: client, shutdown: { await $0.shutdown() }, body)
}
