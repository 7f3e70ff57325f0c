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
    @Test(
        "herald-sw.js shows a delivered message and reports received, clicked and dismissed; counted once; a forged receipt refused; markup shown as text"
    )
    func receipts() async throws {
        try await BrowserScript.run("receipts_test.py")
    }
}
