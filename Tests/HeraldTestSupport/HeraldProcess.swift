import Foundation
import Testing

/// Runs the built `herald` executable as a subprocess, the way a user does (every test target
/// that runs it: the CLI's, the bundles', FCM's).
public struct HeraldProcess {
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String

        public var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
        public var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// `herald` sits next to the test bundle in the build directory.
    public static var executable: URL {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("herald")
    }

    /// Runs `herald` with `arguments`, feeding `stdin`, and waits at most `timeout` for it to end
    /// (on a thread of its own, not the cooperative pool the other tests run on).
    public static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:], timeout: Duration = .seconds(120)) async throws -> Result {
        try await onOwnThread { try runBlocking(arguments, stdin: stdin, environment: environment, timeout: timeout) }
    }

    private static func runBlocking(_ arguments: [String], stdin: String?, environment: [String: String], timeout: Duration) throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("stdout")
        let errURL = directory.appendingPathComponent("stderr")
        try Data().write(to: outURL)
        try Data().write(to: errURL)

        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let outHandle = try FileHandle(forWritingTo: outURL)
        let errHandle = try FileHandle(forWritingTo: errURL)
        process.standardOutput = outHandle
        process.standardError = errHandle
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()

        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline {
                process.terminate()
                Issue.record("herald \(arguments.joined(separator: " ")) did not finish within \(timeout)")
                break
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        process.waitUntilExit()
        try outHandle.close()
        try errHandle.close()
        return Result(
            status: process.terminationStatus,
            stdout: try String(contentsOf: outURL, encoding: .utf8),
            stderr: try String(contentsOf: errURL, encoding: .utf8)
        )
    }
}
