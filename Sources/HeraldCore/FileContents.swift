#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads whole files with the operating system's own reason on failure ("No such file or
/// directory", "Permission denied"), for messages that tell the user what to fix.
package enum FileContents {
    /// Why a file could not be read.
    package struct ReadError: Error, Sendable, Hashable, CustomStringConvertible {
        package var path: String
        /// The system's reason, e.g. "No such file or directory".
        package var reason: String
        package var description: String { "cannot read '\(path)': \(reason)" }
    }

    /// The bytes of the file at `path` (at most `limit` bytes; a larger file is an error).
    package static func read(_ path: String, limit: Int = 64 << 20) throws(ReadError) -> [UInt8] {
        guard let file = fopen(path, "rb") else {
            throw ReadError(path: path, reason: String(cString: strerror(errno)))
        }
        defer { fclose(file) }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count > 0 { bytes.append(contentsOf: chunk[..<count]) }
            if bytes.count > limit { throw ReadError(path: path, reason: "larger than \(limit) bytes") }
            if count < chunk.count {
                if ferror(file) != 0 { throw ReadError(path: path, reason: String(cString: strerror(errno))) }
                return bytes
            }
        }
    }

    /// Why a file could not be written.
    package struct WriteError: Error, Sendable, Hashable, CustomStringConvertible {
        package var path: String
        package var reason: String
        package var description: String { "cannot write '\(path)': \(reason)" }
    }

    /// Writes `bytes` to `path`, replacing it, readable only by its owner when `private` (for keys).
    package static func write(_ bytes: [UInt8], to path: String, private isPrivate: Bool = false) throws(WriteError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, isPrivate ? 0o600 : 0o644)
        guard descriptor >= 0 else { throw WriteError(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { systemWrite(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { throw WriteError(path: path, reason: String(cString: strerror(errno))) }
            offset += written
        }
    }
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
#elseif canImport(Musl)
private let systemWrite = Musl.write
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
#endif
