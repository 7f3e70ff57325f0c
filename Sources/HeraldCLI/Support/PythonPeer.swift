import Foundation

/// A Python program a benchmark compares Herald with (pywebpush, firebase-admin), run as
/// `python3 -c SCRIPT ARGUMENTS…` in a subprocess with a deadline.
enum PythonPeer {
    /// Runs `script` and returns what it printed on standard output, trimmed; its standard error
    /// passes through. Stops it (SIGTERM) past `timeout`. Throws, with `hint` (how to install
    /// what it needs), when it cannot start, fails or overruns.
    static func run(_ script: String, arguments: [String], timeout: Duration, scratch: URL, hint: String) async throws -> String {
        // Standard output goes to a file: nothing has to drain a pipe while the process runs.
        let outputFile = scratch.appendingPathComponent("python-\(UUID().uuidString).out")
        try Data().write(to: outputFile)
        defer { try? FileManager.default.removeItem(at: outputFile) }
        let output = try FileHandle(forWritingTo: outputFile)
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        process.standardOutput = output
        let (ended, end) = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in end.finish() }
        do {
            try process.run()
        } catch {
            throw CommandFailure("cannot start python3: \(error); \(hint)")
        }
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            if process.isRunning { process.terminate() }
        }
        for await _ in ended {}
        watchdog.cancel()
        let overran = (try? await watchdog.value) != nil
        guard !overran else { throw CommandFailure("python3 did not finish within \(timeout); stopped it") }
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw CommandFailure("python3 failed (exit \(process.terminationStatus)); \(hint)")
        }
        return String(decoding: try Data(contentsOf: outputFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
