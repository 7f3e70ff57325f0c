/// Waits until `condition` holds, checking every millisecond, for at most `limit`: a test waits
/// on state, never on a guess of how long something takes. Returns whether it held; the limit
/// is a safety net for a broken build, far above any wait a passing run needs.
public func eventually(within limit: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + limit
    while !condition() {
        if clock.now >= end { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}
