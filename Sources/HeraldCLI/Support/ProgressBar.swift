import Synchronization

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A progress bar on stderr, drawn only when stderr is a terminal and at most ten times a second.
final class ProgressBar: Sendable {
    private let total: Int
    private let label: String
    private let enabled: Bool
    private let state = Mutex<(done: Int, lastDraw: ContinuousClock.Instant)>((0, .now))

    init(total: Int, label: String) {
        self.total = total
        self.label = label
        self.enabled = Terminal.stderrIsTerminal && total >= 1000
    }

    func advance(by count: Int = 1) {
        guard enabled else { return }
        let draw = state.withLock { state -> Int? in
            state.done += count
            let now = ContinuousClock.now
            guard now - state.lastDraw >= .milliseconds(100) || state.done == total else { return nil }
            state.lastDraw = now
            return state.done
        }
        if let draw { render(draw) }
    }

    func finish() {
        guard enabled else { return }
        var line = "\r\u{1B}[K"
        line.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, standardError) }
        fflush(standardError)
    }

    private func render(_ done: Int) {
        let width = 30
        let filled = total == 0 ? width : min(width, done * width / total)
        let percent = total == 0 ? 100 : done * 100 / total
        var line = "\r\(label) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] \(percent)% \(done)/\(total)"
        line.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, standardError) }
        fflush(standardError)
    }
}
