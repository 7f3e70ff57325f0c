import Foundation
import HeraldTestSupport
import Testing

/// A test script under `Tests/Browser` that drives Debian's headless Chromium through
/// Playwright for Python against this build's `herald`, and prints `PASS` when every step held.
enum BrowserScript {
    /// Whether browser tests must run (CI sets `HERALD_REQUIRE_BROWSER=1`): then a missing
    /// browser or Playwright fails them instead of skipping them.
    static var isRequired: Bool { ProcessInfo.processInfo.environment["HERALD_REQUIRE_BROWSER"] == "1" }

    /// Why a browser test cannot run here, in one line saying what to install, or `nil`.
    static func missing() async -> String? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") else {
            return "needs Debian's chromium (apt-get install -y chromium) and Playwright for Python (.ci/run installs both)"
        }
        return await PythonPeers.missing([.playwright, .cryptography])
    }

    /// The package's root: this file is `Tests/HeraldCLITests/BrowserScript.swift`.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs `Tests/Browser/<name>` with `--herald` and `arguments`, skipping (with what to
    /// install) when the browser is missing and not required; records an issue unless it passed.
    static func run(_ name: String, _ arguments: [String] = []) async throws {
        if !isRequired, let reason = await missing() { try Test.cancel(Comment(rawValue: reason)) }
        let script = root.appendingPathComponent("Tests/Browser/\(name)").path
        do {
            let output = try await runCommand("python3", [script, "--herald", HeraldProcess.executable.path] + arguments)
            #expect(output.standardOutput.contains("PASS"), "\(output.all)")
        } catch {
            Issue.record("the browser test failed: \(error)")
        }
    }
}
