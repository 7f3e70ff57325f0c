#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

nonisolated(unsafe) let standardOutput = stdout!
nonisolated(unsafe) let standardError = stderr!
nonisolated(unsafe) let standardInput = stdin!

/// Writes to stdout and stderr through C stdio: buffered, and safe to use from any task because
/// each call writes whole lines.
enum Terminal {
    /// Writes `text` and a newline to stdout.
    static func line(_ text: String) {
        var line = text
        line.append("\n")
        line.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, standardOutput) }
    }

    /// Writes bytes to stdout as they are.
    static func write(bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { _ = fwrite($0.baseAddress, 1, $0.count, standardOutput) }
    }

    /// Writes bytes and a newline to stdout.
    static func line(bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { _ = fwrite($0.baseAddress, 1, $0.count, standardOutput) }
        fputc(0x0A, standardOutput)
    }

    /// Writes one line to stderr, prefixed with `herald: `.
    static func error(_ text: String) {
        var line = "herald: " + text.replacingNewlines()
        line.append("\n")
        fflush(standardOutput)
        line.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, standardError) }
    }

    static func flush() {
        fflush(standardOutput)
    }

    /// Whether standardError is an interactive terminal (for progress bars).
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }

    /// Whether stdout is an interactive terminal.
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) != 0 }
}

extension String {
    func replacingNewlines() -> String {
        split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }.joined(separator: "; ")
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }
}
