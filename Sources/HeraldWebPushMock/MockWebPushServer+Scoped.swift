@_spi(HeraldFlow) import HeraldFlow
import Logging

/// Starts a mock Web Push service, runs `body` with it, and always shuts it down afterwards,
/// whether `body` returned or threw.
///
/// ```swift
/// try await withMockWebPushServer { server in
///     let subscription = server.subscribe()
///     …
/// }
/// ```
public func withMockWebPushServer<Result: Sendable>(
    configuration: MockWebPushServer.Configuration = MockWebPushServer.Configuration(),
    logger: Logger = Logger(label: "herald.webpush.mock", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (MockWebPushServer) async throws -> Result
) async throws -> Result {
    let server = try await MockWebPushServer.start(configuration: configuration, logger: logger)
    return try await withShutdown(of: server, shutdown: { try? await $0.shutdown() }, body)
}
