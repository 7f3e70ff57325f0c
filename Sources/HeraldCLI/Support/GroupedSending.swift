/// What a benchmark's grouped sending came to: `count` messages handed to a client's
/// `send(_:toEach:)` in groups (as the gateway sends a batch's devices), two groups at a time.
/// Shared by `herald bench webpush` and `herald bench fcm`.
struct GroupedSending {
    /// Messages the server accepted.
    var accepted = 0
    /// Messages refused or not sent.
    var failed = 0
    /// The first few failures, described.
    var failures: [String] = []

    /// Sends messages `0..<count` in groups of `width`, calling `send` with each group's indices,
    /// at most two groups outstanding (the client's own in-flight bound does the rest).
    static func run<Success: Sendable, Failure: Error>(
        count: Int, width: Int, _ send: @escaping @Sendable (Range<Int>) async -> [Result<Success, Failure>]
    ) async -> GroupedSending {
        let groups = stride(from: 0, to: count, by: max(1, width)).map { $0..<min(count, $0 + max(1, width)) }
        return await withTaskGroup(of: [Result<Success, Failure>].self) { group in
            var outcome = GroupedSending()
            var next = 0
            while next < min(2, groups.count) {
                let part = groups[next]
                group.addTask { await send(part) }
                next += 1
            }
            while let results = await group.next() {
                outcome.record(results)
                if next < groups.count {
                    let part = groups[next]
                    group.addTask { await send(part) }
                    next += 1
                }
            }
            return outcome
        }
    }

    private mutating func record<Success, Failure>(_ results: [Result<Success, Failure>]) {
        for result in results {
            switch result {
            case .success: accepted += 1
            case .failure(let error):
                failed += 1
                if failures.count < 10 { failures.append("\(error)") }
            }
        }
    }
}
