import Foundation
import Synchronization

/// An independent push service that speaks only HTTP/1.1 over TLS: Python's standard library
/// (`Tests/Peers/http1_push_service.py`), written apart from Herald, so a client that agrees with
/// Herald's own mock is still checked against a server that does not. Its process is ended (by
/// its PID) when ``stop()`` is called or the value is deinitialised.
public final class HTTP1PushService: @unchecked Sendable {
    /// How the service answers every request (the script's modes).
    public enum Mode: String, Sendable {
        /// 201 Created with a Location (RFC 8030 §5).
        case accept
        /// 410 Gone with a JSON reason.
        case gone
        /// 429 without Retry-After, then 201 from the second request to an endpoint on.
        case limited
        /// 429 with `Retry-After: 1`, then 201.
        case limitedAfter = "limited-after"
        /// 503 to every request.
        case storm
        /// 201 with a 1 MiB body.
        case huge
        /// Half an answer, then the connection is closed.
        case cut
        /// 201, after 10 seconds.
        case slow
        /// `100 Continue` and `103 Early Hints`, then 201.
        case informational
    }

    /// One request the service read.
    public struct Request: Sendable, Decodable {
        public var path: String
        public var version: String
        public var length: Int
        public var ttl: String?
        public var encoding: String?
        public var authorization: String
    }

    /// The port it listens on, at 127.0.0.1.
    public let port: Int
    private let process: Process
    private let scratch: ScratchDirectory
    private let log: String
    private let stopped = Mutex(false)

    /// Why the service cannot run here, or `nil`: it needs `python3` (its standard library only).
    public static var unavailableReason: String? {
        let found = ProcessInfo.processInfo.environment["PATH", default: "/usr/bin:/bin"].split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/python3")
        }
        return found ? nil : "the HTTP/1.1-only push service needs python3: apt-get install -y python3"
    }

    /// CI sets `HERALD_REQUIRE_PEERS`: there a missing python3 fails the test instead of skipping it.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["HERALD_REQUIRE_PEERS"] != nil }

    /// Starts the service with a server certificate and key (PEM, for 127.0.0.1) and waits for its port.
    public init(certificatePEM: String, keyPEM: String, mode: Mode) throws {
        scratch = try ScratchDirectory()
        let certificate = try scratch.write("cert.pem", certificatePEM)
        let key = try scratch.write("key.pem", keyPEM)
        log = scratch.file("requests.jsonl")
        try scratch.write("requests.jsonl", "")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/http1_push_service.py").path
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, certificate, key, log, mode.rawValue]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line is the port; a bounded read (a port is at most 6 bytes and a newline).
        var line: [UInt8] = []
        while line.count < 16 {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { break }
            if first == UInt8(ascii: "\n") { break }
            line.append(first)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw CommandFailed(description: "the HTTP/1.1 push service did not start (it printed \(String(decoding: line, as: UTF8.self).debugDescription))")
        }
        self.port = port
    }

    /// `https://127.0.0.1:<port>`.
    public var origin: String { "https://127.0.0.1:\(port)" }

    /// Every request it has read so far, in order.
    public var received: [Request] {
        guard let data = FileManager.default.contents(atPath: log) else { return [] }
        return data.split(separator: UInt8(ascii: "\n")).compactMap { try? JSONDecoder().decode(Request.self, from: Data($0)) }
    }

    /// How many connections it has accepted (TLS included: one that failed its handshake may not count).
    public var connections: Int {
        guard let data = FileManager.default.contents(atPath: log) else { return 0 }
        return data.split(separator: UInt8(ascii: "\n")).filter { $0.starts(with: Array(#"{"connection""#.utf8)) }.count
    }

    /// Ends its process.
    public func stop() {
        // By its PID, and reaped with waitpid: Foundation's `waitUntilExit` spins a run loop that
        // a test's task thread does not run, and never returned here.
        let pid = process.processIdentifier
        guard pid > 0, !stopped.withLock({ $0 }) else { return }
        stopped.withLock { $0 = true }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    deinit { stop() }
}
