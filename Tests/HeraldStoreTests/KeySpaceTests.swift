import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTestSupport
import Testing

/// A broadcast is cut by a hash of each address, into as many ranges as its audience needs:
/// how the tokens look (sharing a prefix, as a registry of one kind of device can) changes
/// neither how evenly it splits nor how many workers can take part of it.
@Suite("Key space", .timeLimit(.minutes(6)))
struct KeySpaceTests {
    @Test("ranges cover the key space from 0 to its end, without gaps or overlaps, in parts of even size", arguments: [1, 2, 3, 16, 7, 4096])
    func rangesCoverTheKeySpace(count: Int) {
        let ranges = KeySpace.ranges(count: count)
        #expect(ranges.count == count)
        #expect(ranges.first?.lower == 0 && ranges.last?.upper == KeySpace.size)
        for (before, after) in zip(ranges, ranges.dropFirst()) { #expect(before.upper == after.lower) }
        let sizes = ranges.map { $0.upper - $0.lower }
        #expect(sizes.max()! - sizes.min()! <= 1)
    }

    @Test("the number of ranges grows with the audience, from one to a bound")
    func rangeCount() {
        #expect(KeySpace.rangeCount(devices: 0) == 1)
        #expect(KeySpace.rangeCount(devices: KeySpace.devicesPerRange) == 1)
        #expect(KeySpace.rangeCount(devices: KeySpace.devicesPerRange + 1) == 2)
        #expect(KeySpace.rangeCount(devices: 300_000) == 19)
        #expect(KeySpace.rangeCount(devices: 10_000_000) == 611)
        #expect(KeySpace.rangeCount(devices: 1_000_000_000) == KeySpace.maximumRanges)
        #expect(KeySpace.rangeCount(devices: -5) == 1)
    }

    @Test("tokens that share a prefix, or count up, spread evenly over the key space")
    func hashesSpread() {
        var random = SplitMix(seed: 18)
        let spread = (0..<64_000).map { _ in (0..<4).map { _ in String(format: "%016llx", random.next()) }.joined() }
        for tokens in [spread, (0..<64_000).map(skewed), (0..<64_000).map { "0" + String(spread[$0].dropFirst()) }] {
            var buckets = [Int](repeating: 0, count: 16)
            for token in tokens { buckets[Int(KeySpace.hash(token) * 16 / KeySpace.size)] += 1 }
            #expect(buckets.allSatisfy { abs($0 - 4000) < 400 }, "\(buckets)")
        }
        #expect(KeySpace.hash("") >= 0 && KeySpace.hash(String(repeating: "f", count: 200)) < KeySpace.size)
    }

    @Test("hashes are stored with each device: the function never changes (values from an independent implementation, Python)", arguments: [
        ("", 4_023_394_144), ("a", 2_191_698_264), (String(repeating: "0", count: 64), 149_564_478),
        ("wp_" + String(repeating: "a", count: 32), 1_482_510_992), ("café", 4_111_146_894),
    ] as [(String, Int64)])
    func hashesAreFixed(address: String, hash: Int64) {
        #expect(KeySpace.hash(address) == hash)
        #expect(KeySpace.hash(String(address[...])) == hash)
    }

    @Test("hashing a batch four at a time gives each address its own hash: any count, lengths mixed within a four, bytes beyond ASCII")
    func hashesOfABatch() {
        let fixed: [String] = ["", "a", String(repeating: "0", count: 64), "wp_" + String(repeating: "a", count: 32), "café"]
        var generator = SplitMix64(seed: 18)
        for count in 0...13 {
            let tokens = (0..<count).map { _ in token(Int(generator.next() % 1_000_000)) }
            #expect(KeySpace.hashes(tokens) == tokens.map(KeySpace.hash), "\(count) tokens of one length")
        }
        let mixed = fixed + (0..<7).map(token) + fixed.reversed() + ["é" + String(repeating: "f", count: 62), String(repeating: "f", count: 64)]
        #expect(KeySpace.hashes(mixed) == mixed.map(KeySpace.hash))
        #expect(KeySpace.hashes(fixed) == [4_023_394_144, 2_191_698_264, 149_564_478, 1_482_510_992, 4_111_146_894])
    }

    @Test("a range's lines: each a token, and after its last space an environment code; empty lines, codes that are not numbers, bytes beyond ASCII")
    func rangeLines() {
        let lines = ["aa", "bb 1", "cc 0", "dd x", "", "é 2", "f g 1", "hh ", " 1", String(repeating: "0", count: 64)]
        // What a split on the newline and then on the last space gives.
        func reference(_ line: String) -> (String, TokenEnvironment?) {
            guard let space = line.lastIndex(of: " ") else { return (line, nil) }
            return (String(line[..<space]), EnvironmentCode.environment(Int64(line[line.index(after: space)...])))
        }
        for count in [1, 2, lines.count] {
            let part = Array(lines.prefix(count))
            let (tokens, environments, _) = QueueEngine.lines(part.joined(separator: "\n"))
            #expect(tokens == part.map { reference($0).0 })
            #expect(environments == part.map { reference($0).1 })
        }
        #expect(QueueEngine.lines("aa\n").tokens == ["aa", ""])
        #expect(QueueEngine.lines("").tokens.isEmpty && QueueEngine.lines(nil).tokens.isEmpty)
    }

    @Test("a range's line of another platform's device: a space, p and its platform's code; the platforms are made only when a line has one")
    func rangeLinePlatforms() {
        let apnsOnly = QueueEngine.lines("aa\nbb 1")
        #expect(apnsOnly.platforms == nil, "APNs devices only: no array")
        let mixed = QueueEngine.lines("aa\nwp_x p1\nbb 0\nfcm_y p2\nzz p9\nqq p")
        #expect(mixed.tokens == ["aa", "wp_x", "bb", "fcm_y", "zz", "qq"])
        #expect(mixed.platforms == [.apns, .webpush, .apns, .fcm, .apns, .apns], "an unknown or missing code is APNs's")
        #expect(mixed.environments == [nil, nil, .production, nil, nil, nil])
    }

    /// A token whose first 60 hex digits are 0 (counting up): all of them in a sliver of the
    /// token space, as tokens split by their first digit would never be.
    func skewed(_ number: Int) -> String { token(number) }

    @Test("a broadcast to devices sharing a prefix: each range goes to another worker at once, one more splits a held one, and every device is sent exactly once", arguments: Backend.allCases)
    func skewedBroadcast(backend: Backend) async throws {
        try await withStore(backend) { store in
            let count = 3 * KeySpace.devicesPerRange - 1000
            try await registerAll(store, count) { try DeviceRegistration(token: skewed($0), tags: $0 % 2 == 0 ? ["even"] : nil) }
            for (audience, expected) in [(Audience.all, count), (.tags(["even"]), count / 2)] {
                let (broadcast, _) = try await store.enqueue(NotificationRequest(app: app, audience: audience, payload: payload))
                let ranges = KeySpace.rangeCount(devices: expected)
                // Each worker's claim takes a range no other worker holds, while they all hold theirs.
                var held: [WorkBatch] = []
                for worker in 0..<ranges {
                    let batches = try await store.claim(owner: "worker-\(worker)", limit: 4000)
                    #expect(batches.count == 1 && batches.first?.items.isEmpty == false, "worker \(worker) of \(ranges) found no range of its own")
                    held += batches
                }
                #expect(ranges >= 2)
                // All ranges held: one more worker splits one of them (what its holder has not read).
                let extra = try await store.claim(owner: "one more", limit: 4000)
                #expect(extra.count == 1 && extra.first?.items.isEmpty == false, "\(ranges) ranges, all held: one is split")
                held += extra
                var sent = held.flatMap { $0.items.map(\.token) }
                for batch in held { try await acceptAll(store, batch) }
                sent += try await deliverAll(store, limit: 4000)
                #expect(sent.count == expected && Set(sent).count == expected, "\(audience): \(sent.count) sends, \(Set(sent).count) devices")
                let done = try #require(try await store.notification(id: broadcast.id))
                #expect(done.status == .done && done.counts.accepted == expected, "\(done.counts)")
            }
        }
    }

    @Test("a broadcast of one range is split on demand: workers that find no free range take part of a held one, and every device is sent exactly once", arguments: Backend.allCases)
    func splitOnDemand(backend: Backend) async throws {
        try await withStore(backend) { store in
            let count = 5000
            try await registerAll(store, count) { try DeviceRegistration(token: token($0)) }
            let (broadcast, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            #expect(KeySpace.rangeCount(devices: count) == 1)
            // Four workers at once, each holding its batch: each after the first splits what is left.
            var held: [WorkBatch] = []
            for worker in 0..<4 {
                let batches = try await store.claim(owner: "worker-\(worker)", limit: 500)
                #expect(batches.count == 1 && batches.first?.items.count == 500, "worker \(worker) got no part of the broadcast")
                held += batches
            }
            let first = held.flatMap { $0.items.map(\.token) }
            #expect(Set(first).count == first.count, "no device in two workers' batches")
            for batch in held { try await acceptAll(store, batch) }
            let rest = try await deliverAll(store, limit: 500)
            let sent = first + rest
            #expect(sent.count == count && Set(sent).count == count, "\(sent.count) sends, \(Set(sent).count) devices")
            let done = try #require(try await store.notification(id: broadcast.id))
            #expect(done.status == .done && done.counts.accepted == count, "\(done.counts)")
        }
    }

    @Test("a batch's last key is its device with the largest hash, unless another shares that hash or the database found another largest")
    func lastKey() throws {
        let tokens = (0..<50).map { token($0 * 7919) }
        let last = try #require(tokens.max { (KeySpace.hash($0), $0) < (KeySpace.hash($1), $1) })
        #expect(QueueEngine.lastKey(of: tokens.shuffled(), maximumHash: KeySpace.hash(last)) == RangeCursor(hash: KeySpace.hash(last), token: last))
        #expect(QueueEngine.lastKey(of: tokens, maximumHash: KeySpace.hash(last) - 1) == nil, "a stored hash that is not the address's")
        #expect(QueueEngine.lastKey(of: [], maximumHash: nil) == nil)
        let (first, second) = try #require(Self.sharedHash())
        #expect(QueueEngine.lastKey(of: [second, first], maximumHash: KeySpace.hash(first)) == nil, "two devices share the largest hash")
    }

    @Test("a batch whose largest hash two devices share ends at the later of them in key order: the next batch starts after both, and every device is sent once", arguments: Backend.allCases)
    func sharedHashAtABatchEnd(backend: Backend) async throws {
        let (first, second) = try #require(Self.sharedHash())
        let shared = KeySpace.hash(first)
        // Devices below the shared hash and above it: the first batch holds those below and the pair.
        var below: [String] = []
        var above: [String] = []
        for number in 0..<20_000 where below.count < 30 || above.count < 20 {
            let candidate = token(number)
            if KeySpace.hash(candidate) < shared, below.count < 30 { below.append(candidate) }
            if KeySpace.hash(candidate) > shared, above.count < 20 { above.append(candidate) }
        }
        try #require(below.count == 30 && above.count == 20)
        let all = below + [first, second] + above
        try await withStore(backend) { store in
            try await registerAll(store, all.count) { try DeviceRegistration(token: all[$0], tags: ["all"]) }
            // Both reads: a broadcast to all, and one to a tag (its own statement).
            for audience in [Audience.all, .tags(["all"])] {
                _ = try await store.enqueue(NotificationRequest(app: app, audience: audience, payload: payload))
                var batches: [[String]] = []
                for _ in 0..<10 {
                    let claimed = try await store.claim(owner: "worker-1", limit: below.count + 2)
                    if claimed.isEmpty { break }
                    for batch in claimed {
                        batches.append(batch.items.map(\.token))
                        try await acceptAll(store, batch)
                    }
                }
                #expect(batches.count == 2, "\(audience): \(batches.map(\.count))")
                #expect(Set(batches.first ?? []) == Set(below + [first, second]), "\(audience)")
                #expect(batches.joined().count == all.count && Set(batches.joined()) == Set(all), "\(audience): every device once")
            }
        }
    }

    /// Two APNs tokens whose hashes are equal (32 bits: some pair among ~80,000 tokens shares one),
    /// found by search, at most a bounded number of tokens.
    static func sharedHash() -> (String, String)? {
        var seen: [Int64: String] = [:]
        for number in 0..<2_000_000 {
            let hex = String(UInt64(number) &* 0x9E37_79B9_7F4A_7C15, radix: 16)
            let candidate = String(repeating: "0", count: 64 - hex.count) + hex
            let hash = KeySpace.hash(candidate)
            if let other = seen[hash], other != candidate { return other < candidate ? (other, candidate) : (candidate, other) }
            seen[hash] = candidate
        }
        return nil
    }

    @Test("a range is split in the middle of what is left, only when more than its holder's batch is left")
    func splitPoint() {
        let size = KeySpace.size
        #expect(KeySpace.split(lower: 0, upper: size, cursor: -1, read: size / 10) == size / 10 + (size - size / 10) / 2)
        #expect(KeySpace.split(lower: 0, upper: size, cursor: -1, read: size / 2) == nil, "half read: one batch's worth left")
        #expect(KeySpace.split(lower: 0, upper: size, cursor: -1, read: size / 3) != nil)
        #expect(KeySpace.split(lower: 0, upper: size, cursor: -1, read: size) == nil)
        #expect(KeySpace.split(lower: 0, upper: 1000, cursor: -1, read: 10) == nil, "too few keys to split")
        #expect(KeySpace.splitNumber(0) == KeySpace.maximumRanges && KeySpace.splitNumber(size - 1) <= Int(Int32.max))
    }
}

/// A seeded generator, so a test's random tokens are the same on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
