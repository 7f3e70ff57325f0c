#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HeraldCore
import Logging

/// `--log-format json`: one JSON object per line on standard error, for log shippers (Loki,
/// Vector, Fluent Bit, journald's JSON parsers): `{"time":"2026-12-06T05:19:27.123Z","level":"info",
/// "label":"herald.gateway","message":"…", …metadata}`. Metadata keys are the record's own and
/// never overwrite `time`, `level`, `label` or `message`. Control characters in a message or a
/// value come out JSON-escaped, so nothing in a log line acts on a terminal.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("time"); writer.string(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        writer.key("level"); writer.string(event.level.rawValue)
        writer.key("label"); writer.string(label)
        writer.key("message"); writer.string(event.message.description)
        if let error = event.error { writer.key("error"); writer.string("\(error)") }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) where !Self.reserved.contains(key) {
            writer.key(key)
            Self.write(value, into: &writer)
        }
        writer.endObject()
        Self.emit(writer.bytes + [0x0A])
    }

    private static let reserved: Set<String> = ["time", "level", "label", "message", "error"]

    private static func write(_ value: Logger.Metadata.Value, into writer: inout JSONWriter) {
        switch value {
        case .string(let text): writer.string(text)
        case .stringConvertible(let convertible): writer.string(convertible.description)
        case .array(let values):
            writer.beginArray()
            for value in values { write(value, into: &writer) }
            writer.endArray()
        case .dictionary(let values):
            writer.beginObject()
            for (key, value) in values.sorted(by: { $0.key < $1.key }) {
                writer.key(key)
                write(value, into: &writer)
            }
            writer.endObject()
        }
    }

    /// One write per line where the line fits (lines of concurrent loggers do not interleave).
    private static func emit(_ line: [UInt8]) {
        line.withUnsafeBytes { buffer in
            var offset = 0
            // Bounded: each pass writes at least a byte or gives up.
            while offset < buffer.count {
                let written = systemWrite(2, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
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
