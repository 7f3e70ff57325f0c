@_spi(HeraldFlow) import HeraldFlow
import Logging

/// Starts a mock FCM, runs `body` with it, and always shuts it down afterwards, whether `body`
/// returned or threw.
///
/// ```swift
/// try await withMockFCMServer { server in
///     try FileContents.write(server.serviceAccountJSON, to: "sa.json", private: true)
///     …
/// }
/// ```
public func withMockFCMServer<Result: Sendable>(
    configuration: MockFCMServer.Configuration = MockFCMServer.Configuration(),
    logger: Logger = Logger(label: "herald.fcm.mock", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (MockFCMServer) async throws -> Result
) async throws -> Result {
    let server = try await MockFCMServer.start(configuration: configuration, logger: logger)
    return try await withShutdown(of: server, shutdown: { try? await $0.shutdown() }, body)
}
