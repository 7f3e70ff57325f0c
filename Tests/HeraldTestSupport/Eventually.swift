/// Waits until `condition` holds, checking it every `interval`, for at most `limit`: a test waits
/// on state, never on a guess of how long something takes. Returns whether it held; the limit
/// is a safety net for a broken build, far above any wait a passing run needs.
public func eventually(
    within limit: Duration = .seconds(30), every interval: Duration = .milliseconds(1), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + limit
    while !(try await condition()) {
        if clock.now >= end { return false }
        try? await Task.sleep(for: interval)
    }
    return true
}
