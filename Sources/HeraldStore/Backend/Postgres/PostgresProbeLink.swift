import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The monitor's own connection, outside the pool (whose connections may all be busy, or
/// stuck on a host that no longer answers): opened when a probe needs one, kept between probes,
/// closed when one fails.
final class PostgresProbeLink: Sendable {
    private let configuration: Result<PostgresConnection.Configuration, any Error>
    private let connection = Mutex<PostgresConnection?>(nil)
    private let logger: Logger

    init(configuration: Result<PostgresConnection.Configuration, any Error>, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The schema version, read on the connection (opened first when there is none); `nil` when
    /// the server answered with an error that does not mean it is unavailable (no schema table yet).
    /// `onClose` runs when the connection opened here closes.
    func ask(onClose: @escaping @Sendable () -> Void) async throws -> Int64? {
        let open = try await opened(onClose: onClose)
        let logger = self.logger
        return try await PostgresMonitor.bounded(by: PostgresReachability.probeDeadline) {
            do {
                return try await PostgresSQLConnection(connection: open, logger: logger).query(PostgresSchema.currentVersion).first?.int(0)
            } catch let error as PSQLError {
                guard let state = error.serverInfo?[.sqlState], PostgresDatabase.code(ofSQLState: state) != .unavailable else { throw error }
                return nil
            }
        }
    }

    /// Closes the connection; the next probe opens another.
    func drop() {
        let open = connection.withLock { connection in
            defer { connection = nil }
            return connection
        }
        if let open { Self.close(open) }
    }

    /// Closes `connection`, keeping it until it is closed (postgres-nio asserts that a connection
    /// is closed before it goes).
    private static func close(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    private func opened(onClose: @escaping @Sendable () -> Void) async throws -> PostgresConnection {
        if let open = connection.withLock({ $0 }), !open.isClosed { return open }
        var configuration = try self.configuration.get()
        configuration.options.connectTimeout = TimeAmount(PostgresReachability.connectDeadline)
        let new = try await PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 0, logger: logger)
        new.closeFuture.whenComplete { _ in onClose() }
        // A connection a probe left behind (past its deadline) may have opened one meanwhile: keep one.
        let kept = connection.withLock { connection -> PostgresConnection in
            if let current = connection, !current.isClosed { return current }
            connection = new
            return new
        }
        if kept !== new { Self.close(new) }
        return kept
    }
}
