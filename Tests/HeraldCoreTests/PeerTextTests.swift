@testable import HeraldCore
import Testing

@Suite("Text from a peer")
struct PeerTextTests {
    @Test("printable text is safe, in ASCII and beyond it; a substring is checked as its own text", arguments: [
        "BadDeviceToken", "", "order-42 📦", "café ☕ 日本", "a \"quoted\" reason: {json}",
    ])
    func safe(_ text: String) {
        #expect(PeerText.isSafe(text))
        #expect(PeerText.isSafe(text[...]))
        #expect(PeerText(text).description == text)
    }

    @Test("controls, C1 controls, separators and bidirectional overrides are unsafe, wherever they are", arguments: [
        "a\u{1B}[31mred", "tab\there", "line\nbreak", "\u{0}", "del\u{7F}", "c1\u{85}", "\u{9B}2J", "x\u{2028}y", "\u{202E}txt.exe", "é\u{2066}",
    ])
    func unsafe(_ text: String) {
        #expect(!PeerText.isSafe(text))
        #expect(!PeerText.isSafe(("ok " + text)[...]))
        #expect(PeerText(text).description != text)
        #expect(PeerText.isSafe(PeerText(text).description))
    }
}
