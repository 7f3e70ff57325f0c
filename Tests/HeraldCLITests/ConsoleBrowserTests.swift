import Foundation
import HeraldTestSupport
import Testing

/// The console in a real browser: `Tests/Browser/console_test.py` starts `herald mock` and
/// `herald serve` (this build's), seeds them through the API, and drives headless Chromium
/// (Debian's `chromium`, through Playwright for Python) through every view, writing a screenshot
/// of each to `.build/console-screenshots`.
@Suite("The console in headless Chromium", .timeLimit(.minutes(6)))
struct ConsoleBrowserTests {
    @Test(
        "sign in, counts, a test send followed to done, deliveries, device search, validation errors, a wrong key, HTML shown as text"
    )
    func console() async throws {
        let screenshots = BrowserScript.root.appendingPathComponent(".build/console-screenshots").path
        try await BrowserScript.run("console_test.py", ["--screenshots", screenshots])
    }
}
