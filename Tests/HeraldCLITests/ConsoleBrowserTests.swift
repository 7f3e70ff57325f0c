import Foundation
import HeraldTestSupport
import Testing

/// The console in a real browser: `Tests/Browser/console_test.py` starts `herald mock` and
/// `herald serve` (this build's), seeds them through the API, and drives headless Chromium
/// (Debian's `chromium`, through Playwright for Python) through every view, writing a screenshot
/// of each to `.build/console-screenshots`.
@Suite("The console in headless Chromium", .timeLimit(.minutes(6)))
struct ConsoleBrowserTests {
    /// Whether the browser test must run (CI sets `HERALD_REQUIRE_BROWSER=1`): then a missing
    /// browser or Playwright fails it instead of skipping it.
    static var isRequired: Bool { ProcessInfo.processInfo.environment["HERALD_REQUIRE_BROWSER"] == "1" }

    /// Why the test cannot run here, in one line saying what to install, or `nil`.
    static func missing() async -> String? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") else {
            return "needs Debian's chromium (apt-get install -y chromium) and Playwright for Python (.ci/run installs both)"
        }
        return await PythonPeers.missing([.playwright, .cryptography])
    }

    /// The package's root: this file is `Tests/HeraldCLITests/ConsoleBrowserTests.swift`.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test(
        "sign in, counts, a test send followed to done, deliveries, device search, validation errors, a wrong key, HTML shown as text"
    )
    func console() async throws {
        if !Self.isRequired, let reason = await Self.missing() { try Test.cancel(Comment(rawValue: reason)) }
        let screenshots = Self.root.appendingPathComponent(".build/console-screenshots").path
        let script = Self.root.appendingPathComponent("Tests/Browser/console_test.py").path
        do {
            let output = try await runCommand("python3", [script, "--herald", HeraldProcess.executable.path, "--screenshots", screenshots])
            #expect(output.standardOutput.contains("PASS"), "\(output.all)")
        } catch {
            Issue.record("the browser test failed: \(error)")
        }
    }
}
