@_spi(HeraldFlow) import HeraldFlow
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

extension APNSClient: Service {
    /// Runs until graceful shutdown is signalled, then drains in-flight notifications and closes.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}

/// Runs `body` with a new client and always shuts it down afterwards, draining what is in flight.
public func withAPNSClient<Result: Sendable>(
    configuration: APNSClient.Configuration,
    eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    logger: Logger = Logger(label: "herald.apns", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (APNSClient) async throws -> Result
) async throws -> Result {
    let client = try APNSClient(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger)
    return try await withShutdown(of: client, shutdown: { await $0.shutdown() }, body)
}
