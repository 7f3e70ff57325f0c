@_spi(HeraldFlow) import HeraldFlow
import Logging

/// Starts a mock Push Kit, runs `body` with it, and always shuts it down afterwards.
///
/// ```swift
/// try await withMockHMSServer { server in
///     var configuration = HMSClient.Configuration(app: server.appCredentials, serviceAccount: server.serviceAccount)
///     configuration.endpoint = server.origin
///     configuration.additionalTrustRoots = [server.certificateAuthority]
///     …
/// }
/// ```
public func withMockHMSServer<Result: Sendable>(
    configuration: MockHMSServer.Configuration = MockHMSServer.Configuration(),
    logger: Logger = Logger(label: "herald.hms.mock", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (MockHMSServer) async throws -> Result
) async throws -> Result {
    let server = try await MockHMSServer.start(configuration: configuration, logger: logger)
    return try await withShutdown(of: server, shutdown: { try? await $0.shutdown() }, body)
}
