import Foundation
import HeraldTestSupport
import Testing

/// The browser kit in a real browser: `Tests/Browser/receipts_test.py` starts `herald serve`
/// (this build's) with a browser-only app, a push service and a team's site of its own, and
/// drives headless Chromium (Debian's `chromium`, through Playwright for Python): the page
/// subscribes with `/sdk/herald-page.js`, a notification sent through the API is delivered to
/// the service worker running `/sdk/herald-sw.js` exactly as the push service decrypted it, and
/// the receipts it reports cross-origin (received, clicked, dismissed; a repeat, a forgery) are
/// counted, or refused, by the gateway.
@Suite("The browser kit in headless Chromium", .timeLimit(.minutes(6)))
struct BrowserKitTests {
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

    /// The package's root: this file is `Tests/HeraldCLITests/BrowserKitTests.swift`.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test(
        "herald-sw.js shows a delivered message and reports received, clicked and dismissed; counted once; a forged receipt refused; markup shown as text"
    )
    func receipts() async throws {
        if !Self.isRequired, let reason = await Self.missing() { try Test.cancel(Comment(rawValue: reason)) }
        let script = Self.root.appendingPathComponent("Tests/Browser/receipts_test.py").path
        do {
            let output = try await runCommand("python3", [script, "--herald", HeraldProcess.executable.path])
            #expect(output.standardOutput.contains("PASS"), "\(output.all)")
        } catch {
            Issue.record("the browser test failed: \(error)")
        }
    }
}
