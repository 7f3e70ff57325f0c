import Foundation

/// A webhook receiver for tests: Python's `http.server` on 127.0.0.1, in a process of its own,
/// that checks each request's `Herald-Signature` with Python's `hmac` (not Herald's code) and
/// records every request, with its answer, as a line of JSON.
///
/// It answers 500 to its first `failing` requests, and to every request while `okFile` is
/// given and does not exist; 200 otherwise. The secret reaches it through its environment,
/// never its command line.
public final class WebhookReceiver: @unchecked Sendable {
    /// One request as the receiver saw it.
    public struct Record: Sendable {
        /// What it answered.
        public var status: Int
        /// Whether `v1` was the HMAC-SHA256 of `"<t>.<body>"` with the secret.
        public var valid: Bool
        /// The signature's `t`.
        public var timestamp: Int?
        public var body: String
    }

    public let port: Int
    private let process = Process()
    private let log: String
    private let okFile: String

    static let script = #"""
        import hashlib, hmac, http.server, json, os, sys, threading
        import time
        log, failing, ok_file, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
        secret = os.environ["WEBHOOK_RECEIVER_SECRET"].encode()
        lock, seen = threading.Lock(), [0]

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                fields = dict(p.split("=", 1) for p in self.headers.get("Herald-Signature", "").split(",") if "=" in p)
                expected = hmac.new(secret, fields.get("t", "").encode() + b"." + body, hashlib.sha256).hexdigest()
                valid = hmac.compare_digest(expected, fields.get("v1", ""))
                with lock:
                    seen[0] += 1
                    ok = seen[0] > failing and (ok_file == "" or os.path.exists(ok_file))
                    status = 200 if ok else 500
                    with open(log, "a") as f:
                        f.write(json.dumps({"status": status, "valid": valid, "t": fields.get("t"), "body": body.decode()}) + "\n")
                if mode == "hang":  # never answers
                    time.sleep(3600)
                self.send_response(status)
                if mode == "flood":  # an endless answer, until the client goes
                    self.end_headers()
                    try:
                        while True:
                            self.wfile.write(b"x" * 65536)
                    except OSError:
                        return
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    /// How it answers, besides its status.
    public enum Mode: String, Sendable {
        case normal
        /// It reads the request and never answers.
        case hang
        /// It answers with a body that never ends.
        case flood
    }

    /// Starts a receiver; it answers 500 to its first `failing` requests, and, when `untilAllowed`,
    /// to every request until ``allow()``.
    public init(scratch: ScratchDirectory, secret: String, failing: Int = 0, untilAllowed: Bool = false, mode: Mode = .normal) async throws {
        let name = "receiver-\(UUID().uuidString)"
        let script = try scratch.write("\(name).py", Self.script)
        log = scratch.file("\(name).jsonl")
        okFile = scratch.file("\(name).ok")
        _ = FileManager.default.createFile(atPath: log, contents: Data())
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, log, String(failing), untilAllowed ? okFile : "", mode.rawValue]
        process.environment = ProcessInfo.processInfo.environment.merging(["WEBHOOK_RECEIVER_SECRET": secret]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // Its first line is its port (bounded: 30 s), waited for on a thread of its own.
        let text = await onOwnThread { [process] in
            var text = ""
            let deadline = Date().addingTimeInterval(30)
            while !text.contains("\n"), Date() < deadline, process.isRunning {
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { Thread.sleep(forTimeInterval: 0.01) } else { text += String(decoding: data, as: UTF8.self) }
            }
            return text
        }
        guard let port = Int(text.split(separator: "\n").first ?? "") else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw ReceiverError(description: "the receiver did not start: \(text)")
        }
        self.port = port
    }

    struct ReceiverError: Error, CustomStringConvertible { var description: String }

    /// `http://127.0.0.1:PORT/hook`.
    public var url: String { "http://127.0.0.1:\(port)/hook" }

    /// From now on it answers 200.
    public func allow() {
        _ = FileManager.default.createFile(atPath: okFile, contents: Data())
    }

    /// Every request so far, in order.
    public var records: [Record] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return Record(
                status: object["status"] as? Int ?? 0, valid: object["valid"] as? Bool ?? false, timestamp: (object["t"] as? String).flatMap { Int($0) },
                body: object["body"] as? String ?? ""
            )
        }
    }

    /// Stops it: SIGKILL to its process, by its PID (a test process may block SIGTERM, and a
    /// child started from it inherits the mask).
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}
