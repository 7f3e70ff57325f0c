#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

import HeraldCore

/// Reads a file (or stdin for `-`) line by line without loading it whole, so a token file of
/// millions of lines costs one line of memory at a time.
final class LineReader: Sequence, IteratorProtocol {
    private let file: UnsafeMutablePointer<FILE>
    private let ownsFile: Bool
    private var buffer: UnsafeMutablePointer<CChar>?
    private var capacity = 0

    /// Opens `path`, or stdin when `path` is `-`.
    init(path: String) throws {
        if path == "-" {
            file = standardInput
            ownsFile = false
        } else {
            guard let opened = fopen(path, "r") else {
                throw CommandFailure.usage("cannot read '\(path)': \(String(cString: strerror(errno)))")
            }
            file = opened
            ownsFile = true
        }
    }

    deinit {
        free(buffer)
        if ownsFile { fclose(file) }
    }

    func next() -> String? {
        let count = getline(&buffer, &capacity, file)
        guard count >= 0, let buffer else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: buffer, count: count), as: UTF8.self)
    }
}

extension FileContents {
    /// The bytes of a file, or of stdin for `-`.
    static func readArgument(_ path: String, what: String) throws -> [UInt8] {
        if path == "-" {
            var bytes = [UInt8]()
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, standardInput) }
                bytes.append(contentsOf: chunk[..<count])
                if count < chunk.count { return bytes }
            }
        }
        do {
            return try FileContents.read(path)
        } catch {
            throw CommandFailure.usage("cannot read \(what) '\(path)': \(error.reason)")
        }
    }
}
