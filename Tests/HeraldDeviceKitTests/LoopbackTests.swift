import Foundation
import HeraldDeviceKit
import Testing

/// One real HTTP/1.1 round trip through `URLSessionTransport`: Python's `http.server` on
/// 127.0.0.1 plays the gateway and the app's backend, and writes down every request it gets.
@Suite("URLSessionTransport over loopback", .timeLimit(.minutes(1)))
struct LoopbackTests {
    @Test("A flush and a registration reach a real HTTP server as the bytes the route expects")
    func roundTrip() async throws {
        guard let python = Self.python else {
            if ProcessInfo.processInfo.environment["HERALD_REQUIRE_PEERS"] != nil { Issue.record("needs python3") }
            return
        }
        let scratch = try Scratch()
        let server = try RecordingServer(python: python, directory: scratch.url)
        defer { server.stop() }
        let base = URL(string: "http://127.0.0.1:\(try await server.port())")!
        let transport = URLSessionTransport(timeout: .seconds(10))

        let receipts = HeraldReceipts(configuration: .init(gateway: base, directory: scratch.url), transport: transport)
        try receipts.record(HeraldEvent(.received, receipt: HeraldReceipt(token: "AQAB")!))
        try receipts.record(HeraldEvent(.clicked(action: "reply"), receipt: HeraldReceipt(token: "AQAB")!))
        let report = try await receipts.flush()
        #expect(report.taken == 2)
        #expect(report.dropped == 0)
        #expect(report.pending == 0)

        let device = HeraldDevice(
            configuration: .init(
                backend: base.appending(components: "me", "devices"), environment: .production, directory: scratch.url,
                headers: ["Authorization": "Bearer app-session"]
            ),
            transport: transport
        )
        #expect(try await device.register(deviceToken: Data([0xde, 0xad, 0xbe, 0xef])) == .sent)

        // The server writes each request down before it answers: both are there now.
        let requests = try server.requests()
        try #require(requests.count == 2)
        #expect(requests[0].method == "POST")
        #expect(requests[0].path == "/v1/receipts")
        #expect(requests[0].contentType == "application/json")
        #expect(requests[0].body == #"{"events":[{"event":"received","receipt":"AQAB"},{"action":"reply","event":"clicked","receipt":"AQAB"}]}"#)
        #expect(requests[1].method == "PUT")
        #expect(requests[1].path == "/me/devices/deadbeef")
        #expect(requests[1].authorization == "Bearer app-session")
        #expect(requests[1].body.hasPrefix(#"{"environment":"production","locale":""#))
    }

    static var python: String? {
        let path = ProcessInfo.processInfo.environment["PATH", default: "/usr/bin:/bin"]
        return path.split(separator: ":").map { "\($0)/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// `python3` serving HTTP/1.1 on 127.0.0.1, an ephemeral port: answers POST with the receipt
/// route's 202 and PUT with 204, after appending the request as a JSON line to a file. It exits
/// by itself after 60 seconds.
final class RecordingServer {
    struct Request: Decodable {
        var method: String
        var path: String
        var contentType: String?
        var authorization: String?
        var body: String
    }

    private let process = Process()
    private let portFile: URL
    private let log: URL

    init(python: String, directory: URL) throws {
        portFile = directory.appending(component: "server.port")
        log = directory.appending(component: "server.log")
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", Self.script, portFile.path, log.path]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    /// The port, once the server has written it (waits up to 10 s).
    func port() async throws -> Int {
        for _ in 0..<200 {
            if let text = try? String(contentsOf: portFile, encoding: .utf8), let port = Int(text) { return port }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ServerDidNotStart()
    }

    func requests() throws -> [Request] {
        let text = try String(contentsOf: log, encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONDecoder().decode(Request.self, from: Data($0.utf8)) }
    }

    /// Ends the process: by its PID, reaped with `waitpid`, since Foundation's `waitUntilExit`
    /// spins a run loop that a test's task thread does not run, and never returns there.
    func stop() {
        let pid = process.processIdentifier
        guard pid > 0 else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    struct ServerDidNotStart: Error {}

    private static let script = #"""
        import http.server, json, os, sys, time
        port_file, log_file = sys.argv[1], sys.argv[2]

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def record(self, status, reply):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                line = json.dumps({"method": self.command, "path": self.path,
                                   "contentType": self.headers.get("Content-Type"),
                                   "authorization": self.headers.get("Authorization"),
                                   "body": body.decode("utf-8")})
                with open(log_file, "a") as log:
                    log.write(line + "\n")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def do_POST(self):
                self.record(202, b'{"taken": 2, "refused": []}')

            def do_PUT(self):
                self.record(204, b"")

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.timeout = 0.5
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(port_file + ".tmp", port_file)
        deadline = time.time() + 60
        while time.time() < deadline:
            server.handle_request()
        """#
}
