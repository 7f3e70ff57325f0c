import Foundation
import HeraldTestSupport
import Testing

/// A `herald` process left running (such as `herald mock`), stopped with SIGTERM by its PID.
final class BackgroundHerald: @unchecked Sendable {
    private let process = Process()
    private let lock = NSLock()
    private var output = ""
    private var ended = false

    /// - Parameters:
    ///   - environment: added to the test process's environment.
    ///   - launcher: a command and its arguments, ending with herald's path, that run herald
    ///     (`setpriv … /path/to/herald`) with `arguments` after them; or none.
    init(_ arguments: [String], environment: [String: String] = [:], launcher: [String] = []) throws {
        if let first = launcher.first {
            process.executableURL = URL(fileURLWithPath: first)
            process.arguments = Array(launcher.dropFirst()) + arguments
        } else {
            process.executableURL = HeraldProcess.executable
            process.arguments = arguments
        }
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            self.lock.lock()
            if data.isEmpty {
                self.ended = true  // end of file: the process has exited and closed its output
                handle.readabilityHandler = nil
            } else {
                self.output += String(decoding: data, as: UTF8.self)
            }
            self.lock.unlock()
        }
        try process.run()
    }

    var arguments: [String] { process.arguments ?? [] }

    /// Ends it with SIGKILL: no handler runs, nothing is flushed or recorded (a crash, an OOM kill).
    func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return output
    }

    /// Waits (at most `timeout`) for output matching `pattern` and returns the first match.
    func wait(for pattern: String, timeout: Duration = .seconds(60)) async throws -> String {
        try await onOwnThread { try self.waitBlocking(for: pattern, timeout: timeout) }
    }

    private func waitBlocking(for pattern: String, timeout: Duration) throws -> String {
        let regex = try Regex(pattern)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let match = text.firstMatch(of: regex) { return String(text[match.range]) }
            guard process.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw WaitError(description: "no '\(pattern)' in the output of herald \(process.arguments ?? []): \(text)")
    }

    struct WaitError: Error, CustomStringConvertible { var description: String }

    /// Sends it `signal` (SIGHUP, say) and leaves it running.
    func send(_ signal: Int32) {
        if process.isRunning { Foundation.kill(process.processIdentifier, signal) }
    }

    /// Sends it SIGTERM and does not wait (for a `defer`; ``stop()`` waits).
    func terminate() {
        if process.isRunning { process.terminate() }
    }

    /// Stops it with SIGTERM and returns its exit status, once all it printed has been read
    /// (waiting at most 10 s for the end of its output).
    @discardableResult
    func stop() async -> Int32 {
        await onOwnThread { self.stopBlocking() }
    }

    private func stopBlocking() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        for _ in 0..<1000 {
            lock.lock()
            let done = ended
            lock.unlock()
            if done { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return process.terminationStatus
    }

    deinit { if process.isRunning { process.terminate() } }
}
