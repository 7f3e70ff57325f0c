import Synchronization

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A progress bar on stderr, drawn only when stderr is a terminal and at most ten times a second.
final class ProgressBar: Sendable {
    private let total: Int?
    private let label: String
    private let enabled: Bool
    private let state = Mutex<(done: Int, lastDraw: ContinuousClock.Instant)>((0, .now))

    /// - Parameters:
    ///   - total: how many there will be, when known.
    ///   - enabled: whether to draw at all (it never draws unless stderr is a terminal).
    init(total: Int?, label: String, enabled: Bool = true) {
        self.total = total
        self.label = label
        self.enabled = enabled && Terminal.stderrIsTerminal && (total ?? .max) >= 1000
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

    /// Shows `done` of the total: progress read from elsewhere (a notification's counts), not counted here.
    func set(_ done: Int) {
        guard enabled else { return }
        let draw = state.withLock { state -> Int? in
            guard done != state.done else { return nil }
            state.done = done
            state.lastDraw = .now
            return done
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
        var line: String
        if let total {
            let width = 30
            let filled = total == 0 ? width : min(width, done * width / total)
            let percent = total == 0 ? 100 : done * 100 / total
            line = "\r\(label) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] \(percent)% \(done)/\(total)"
        } else {
            line = "\r\(label) \(done)"
        }
        line.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, standardError) }
        fflush(standardError)
    }
}
