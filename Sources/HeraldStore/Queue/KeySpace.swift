/// Where a device sits in a broadcast's key space: a hash of its address, so that a broadcast
/// splits into parts of even size whatever the addresses look like (APNs tokens that share a
/// prefix, Web Push endpoint URLs, FCM registration tokens), and any number of workers, in any
/// number of processes, can each take a part.
enum KeySpace {
    /// Keys run over 0..<size.
    static let size: Int64 = 1 << 32

    /// The hash of `address`: FNV-1a (64-bit) of its UTF-8 bytes, mixed by MurmurHash3's
    /// finaliser (FNV alone leaves addresses that differ only in their last characters close
    /// together), its top 32 bits. Hashes are stored with each device: this function must never
    /// change.
    static func hash(_ address: String) -> Int64 {
        func fnv(_ bytes: some Sequence<UInt8>) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
            return hash
        }
        // Over the string's own bytes where it has them (a native string): every device of a
        // broadcast's batch is hashed when it is claimed.
        var hash = address.utf8.withContiguousStorageIfAvailable { fnv($0) } ?? fnv(address.utf8)
        hash ^= hash >> 33
        hash &*= 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash &*= 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return Int64(hash >> 32)
    }

    /// Devices per range a broadcast aims for: many batches each (a range's last batch is a
    /// partial one, and each batch costs a claim and a completion), few enough that a large
    /// broadcast keeps every worker of every process busy (300 k devices: 19 ranges).
    static let devicesPerRange = 16_384
    /// The fewest ranges of a broadcast: a small one is read by one worker a batch at a time.
    static let minimumRanges = 1
    /// The most (one row each): 10 M devices make 611 ranges, 100 M make 4,096.
    static let maximumRanges = 4096

    /// The fewest keys a leased range must have left above what its holder read for another
    /// worker to split them off.
    static let minimumSplit: Int64 = 1 << 13

    /// Where a range whose holder read up to `read` (from `cursor`, within `lower..<upper`) is
    /// split, if it should be: when more keys are left than the holder's batch spanned, at the
    /// middle of what is left. The part above goes to another worker.
    static func split(lower: Int64, upper: Int64, cursor: Int64, read: Int64) -> Int64? {
        let left = upper - read
        let batch = max(read - max(cursor, lower - 1), 1)
        guard left >= minimumSplit, left > batch else { return nil }
        return read + left / 2
    }

    /// The number of a range split off at `middle`: unique among a notification's ranges (ranges
    /// are disjoint, and split only when `minimumSplit` keys are left), and above every number a
    /// broadcast starts with.
    static func splitNumber(_ middle: Int64) -> Int { maximumRanges + Int(middle >> 2) }

    /// How many ranges a broadcast to about `devices` devices is cut into: more devices, more
    /// ranges, so the workers one broadcast can keep busy grow with it.
    static func rangeCount(devices: Int) -> Int {
        min(maximumRanges, max(minimumRanges, (max(devices, 0) + devicesPerRange - 1) / devicesPerRange))
    }

    /// The key ranges `lower..<upper` of a broadcast cut into `count` parts of even size.
    static func ranges(count: Int) -> [(lower: Int64, upper: Int64)] {
        let count = Int64(max(1, count))
        return (0..<count).map { index in (size * index / count, size * (index + 1) / count) }
    }
}
