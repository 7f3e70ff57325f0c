import Foundation

/// What a command printed.
public struct CommandOutput: Sendable {
    public var standardOutput: String
    public var standardError: String
    /// Both, standard output first.
    public var all: String { standardOutput + standardError }
}

/// A command that exited with a failure status, with what it printed.
public struct CommandFailed: Error, CustomStringConvertible {
    public var description: String
}

/// Runs `command` (found on the PATH: openssl, python3) with `arguments` and returns what it
/// printed; throws, with its output, when it exits with a failure status. It waits on a thread
/// of its own (``onOwnThread(_:)``), not the cooperative pool.
@discardableResult
public func runCommand(_ command: String, _ arguments: [String]) async throws -> CommandOutput {
    try await onOwnThread { try runCommandBlocking(command, arguments) }
}

private func runCommandBlocking(_ command: String, _ arguments: [String]) throws -> CommandOutput {
    // Standard error goes to a file, so neither pipe can fill while the other is read.
    let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("herald-command-\(UUID().uuidString)")
    try Data().write(to: errorFile)
    defer { try? FileManager.default.removeItem(at: errorFile) }
    let errors = try FileHandle(forWritingTo: errorFile)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [command] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try errors.close()
    let result = CommandOutput(
        standardOutput: String(decoding: data, as: UTF8.self),
        standardError: String(decoding: try Data(contentsOf: errorFile), as: UTF8.self)
    )
    guard process.terminationStatus == 0 else {
        throw CommandFailed(description: "\(command) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus): \(result.all)")
    }
    return result
}
