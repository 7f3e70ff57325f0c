import Foundation
import Synchronization

/// A throwaway PostgreSQL cluster for the tests, from the installed binaries (Debian's
/// `postgresql`): initdb in a temporary directory, a free port on 127.0.0.1, trust authentication
/// for user `herald`. initdb refuses to run as root, so as root both run as the `postgres` user.
/// The server is a child of the test process that dies with it (`setpriv --pdeathsig`), and is
/// stopped and removed at exit. One cluster per test process; each test takes a database of its own.
public final class PostgresCluster: @unchecked Sendable {
    public let port: Int
    public let directory: String
    private let binaries: String
    private let lock = NSLock()
    private var server: Process?

    /// The installed binaries' directory, if PostgreSQL is installed.
    public static let binaries: String? = {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.compactMap(Int.init).sorted().last.map { "\(root)/\($0)/bin" }
            .flatMap { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") ? $0 : nil }
    }()

    /// Whether PostgreSQL cases must run (CI sets `HERALD_REQUIRE_POSTGRES=1`): then a missing
    /// installation is a failure, not a skip.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["HERALD_REQUIRE_POSTGRES"] == "1" }

    /// Why PostgreSQL cases cannot run here, or `nil` when they can.
    public static var unavailableReason: String? {
        binaries == nil ? "PostgreSQL's binaries are not installed (apt-get install postgresql); .ci/run installs them" : nil
    }

    /// The process's cluster, started on first use (on a thread of its own: initdb and the
    /// server's start take seconds).
    public static func shared() async throws -> PostgresCluster {
        try await sharedCluster.value
    }

    private static let sharedCluster = Task<PostgresCluster, any Error> {
        let cluster = try await onOwnThread { try PostgresCluster() }
        started.withLock { $0 = cluster }
        atexit { PostgresCluster.stopShared() }
        return cluster
    }

    /// The shared cluster once it has started, for the exit handler.
    private static let started = Mutex<PostgresCluster?>(nil)

    private static func stopShared() {
        started.withLock { $0 }?.stop()
    }

    /// Whether commits reach the disk before they return (off for the shared cluster: fast, and
    /// a test never crashes it).
    private let durable: Bool

    private init(durable: Bool = false) throws {
        self.durable = durable
        guard let binaries = Self.binaries else { throw ClusterError(Self.unavailableReason ?? "no PostgreSQL") }
        self.binaries = binaries
        let asRoot = getuid() == 0
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pg-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if asRoot { try Self.execute("/bin/chown", ["postgres:postgres", directory]) }
        try Self.execute(binaries + "/initdb", ["-D", directory + "/data", "-U", "herald", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"], asPostgres: asRoot)
        port = try Self.freePort()
        try launch()
    }

    /// Where servers write their log, `pg-PORT.log` each (`HERALD_PG_LOG_DIR`, for hunting a
    /// flaky test); unset, the log is discarded.
    private static let logDirectory = ProcessInfo.processInfo.environment["HERALD_PG_LOG_DIR"]
    /// What a server logs when ``logDirectory`` is set: lock waits past `deadlock_timeout` (1 s)
    /// and statements slower than 3 s, with time, process and database.
    private static let diagnostics = ["-c", "log_lock_waits=on", "-c", "log_min_duration_statement=3000", "-c", "log_line_prefix=%m [%p] %d "]

    /// The thread servers are started from. `--pdeathsig` kills a server when the *thread* that
    /// started it ends, not the process, and ``onOwnThread(_:)``'s threads end: so one thread
    /// that lasts as long as the test process starts them all.
    private static let launcher = LauncherThread()

    /// Starts the server on the cluster's port and files; returns once it accepts connections.
    private func launch() throws {
        let server = Process()
        let arguments = [
            binaries + "/postgres", "-D", directory + "/data", "-p", String(port), "-k", directory, "-c", "listen_addresses=127.0.0.1",
            "-c", "max_connections=200",
        ] + (Self.logDirectory == nil ? [] : Self.diagnostics) + (durable ? [] : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
        // setpriv: the server dies with this process (PR_SET_PDEATHSIG), and runs as postgres when we are root.
        server.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        server.arguments = (getuid() == 0 ? ["--reuid=postgres", "--regid=postgres", "--init-groups"] : []) + ["--pdeathsig", "KILL", "--"] + arguments
        let logPath = Self.logDirectory.map { $0 + "/pg-\(port).log" } ?? "/dev/null"
        // Appended to: a cluster started again after ``halt()`` keeps its earlier log.
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = FileHandle(forWritingAtPath: logPath)
        _ = try? log?.seekToEnd()
        server.standardOutput = log
        server.standardError = log
        try Self.launcher.perform { try server.run() }
        lock.withLock { self.server = server }
        for _ in 0..<300 {
            if (try? Self.execute(binaries + "/pg_isready", ["-h", "127.0.0.1", "-p", String(port), "-U", "herald", "-q"])) != nil { return }
            guard server.isRunning else { break }
            usleep(100_000)
        }
        server.terminate()
        throw ClusterError("PostgreSQL in \(directory) did not start")
    }

    /// A new empty database, as a `postgres://` URL.
    public func createDatabase() async throws -> String {
        try await onOwnThread { try self.createDatabaseBlocking() }
    }

    private func createDatabaseBlocking() throws -> String {
        let name = "herald_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        try Self.execute(binaries + "/psql", ["-h", "127.0.0.1", "-p", String(port), "-U", "herald", "-d", "postgres", "-q", "-c", "CREATE DATABASE \(name)"])
        return "postgres://herald@127.0.0.1:\(port)/\(name)?sslmode=disable"
    }

    /// Runs `sql` in `database` with psql and returns what it printed (unaligned, tuples only).
    @discardableResult
    public func psql(_ sql: String, database: String) async throws -> String {
        try await onOwnThread { try self.psqlBlocking(sql, database: database) }
    }

    private func psqlBlocking(_ sql: String, database: String) throws -> String {
        let name = database.split(separator: "/").last.map { String($0.split(separator: "?")[0]) } ?? database
        return try Self.execute(binaries + "/psql", ["-h", "127.0.0.1", "-p", String(port), "-U", "herald", "-d", name, "-qAt", "-c", sql])
    }

    /// Stops the server at once (as a crash would) and removes its files.
    public func stop() {
        halt()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops the server at once (SIGQUIT, as a crash would), keeping its files.
    public func halt() {
        guard let server = lock.withLock({ self.server }), server.isRunning else { return }
        kill(server.processIdentifier, SIGQUIT)
        server.waitUntilExit()
    }

    /// Starts the server again after ``halt()``, on the same port and files.
    public func resume() async throws {
        try await onOwnThread { try self.launch() }
    }

    /// A cluster of the caller's own, for a test that stops and starts it (the shared one serves
    /// tests running at the same time), with PostgreSQL's durable defaults: what was committed
    /// survives ``halt()``. Stop it with ``stop()``.
    public static func dedicated() async throws -> PostgresCluster {
        try await onOwnThread { try PostgresCluster(durable: true) }
    }

    @discardableResult
    static func execute(_ executable: String, _ arguments: [String], asPostgres: Bool = false) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: asPostgres ? "/usr/bin/setpriv" : executable)
        process.arguments = asPostgres ? ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", executable] + arguments : arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw ClusterError("\((executable as NSString).lastPathComponent) exited with \(process.terminationStatus): \(text)")
        }
        return text
    }

    /// A port nothing listens on now, on 127.0.0.1.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ClusterError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A thread that runs what it is given, one at a time, for as long as the process lives.
    private final class LauncherThread: @unchecked Sendable {
        private let condition = NSCondition()
        private var jobs: [() -> Void] = []

        init() {
            Thread.detachNewThread { [self] in
                while true {
                    condition.lock()
                    while jobs.isEmpty { condition.wait() }
                    let job = jobs.removeFirst()
                    condition.unlock()
                    job()
                }
            }
        }

        /// Runs `body` on the thread; blocks the caller until it is done.
        func perform(_ body: @escaping () throws -> Void) throws {
            let done = NSCondition()
            var finished = false
            var failure: (any Error)?
            condition.lock()
            jobs.append {
                do { try body() } catch { failure = error }
                done.lock()
                finished = true
                done.signal()
                done.unlock()
            }
            condition.signal()
            condition.unlock()
            done.lock()
            while !finished { done.wait() }
            done.unlock()
            if let failure { throw failure }
        }
    }

    public struct ClusterError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}
