/// Where a device sits in a broadcast's key space: a hash of its address, so that a broadcast
/// splits into parts of even size whatever the addresses look like (APNs tokens that share a
/// prefix, Web Push endpoint URLs, FCM registration tokens), and any number of workers, in any
/// number of processes, can each take a part.
package enum KeySpace {
    /// Keys run over 0..<size.
    static let size: Int64 = 1 << 32

    /// The hash of `address`: FNV-1a (64-bit) of its UTF-8 bytes, mixed by MurmurHash3's
    /// finaliser (FNV alone leaves addresses that differ only in their last characters close
    /// together), its top 32 bits. Hashes are stored with each device: this function must never
    /// change.
    package static func hash(_ address: String) -> Int64 {
        func fnv(_ bytes: some Sequence<UInt8>) -> UInt64 {
            var hash = fnvBasis
            for byte in bytes {
                hash ^= UInt64(byte)
                hash &*= fnvPrime
            }
            return hash
        }
        // Over the string's own bytes where it has them (a native string).
        return finish(address.utf8.withContiguousStorageIfAvailable { fnv($0) } ?? fnv(address.utf8))
    }

    /// `hash(_:)` of each of `addresses`, in their order. A claim hashes every device of its
    /// batch to find the batch's last key, and each FNV step waits on the one before it: four
    /// addresses of one length are hashed at a time, their steps interleaved, so a core runs the
    /// four chains side by side (10,000 tokens of 64 hex digits: 54 → 24 ns each, on this machine).
    static func hashes(_ addresses: [String]) -> [Int64] {
        var hashes: [Int64] = []
        hashes.reserveCapacity(addresses.count)
        var index = 0
        while index + 4 <= addresses.count {
            var (a, b, c, d) = (addresses[index], addresses[index + 1], addresses[index + 2], addresses[index + 3])
            let count = a.utf8.count
            guard b.utf8.count == count, c.utf8.count == count, d.utf8.count == count else {
                hashes.append(hash(a))
                index += 1
                continue
            }
            let four = a.withUTF8 { a in
                b.withUTF8 { b in
                    c.withUTF8 { c in
                        d.withUTF8 { d in
                            var (ha, hb, hc, hd) = (fnvBasis, fnvBasis, fnvBasis, fnvBasis)
                            for at in 0..<count {
                                ha = (ha ^ UInt64(a[at])) &* fnvPrime
                                hb = (hb ^ UInt64(b[at])) &* fnvPrime
                                hc = (hc ^ UInt64(c[at])) &* fnvPrime
                                hd = (hd ^ UInt64(d[at])) &* fnvPrime
                            }
                            return (finish(ha), finish(hb), finish(hc), finish(hd))
                        }
                    }
                }
            }
            hashes.append(four.0)
            hashes.append(four.1)
            hashes.append(four.2)
            hashes.append(four.3)
            index += 4
        }
        while index < addresses.count {
            hashes.append(hash(addresses[index]))
            index += 1
        }
        return hashes
    }

    private static let fnvBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    private static let fnvPrime: UInt64 = 0x0000_0100_0000_01b3

    /// FNV's result mixed by MurmurHash3's finaliser, its top 32 bits.
    private static func finish(_ fnv: UInt64) -> Int64 {
        Int64(mix(fnv) >> 32)
    }

    private static func mix(_ fnv: UInt64) -> UInt64 {
        var hash = fnv
        hash ^= hash >> 33
        hash &*= 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash &*= 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return hash
    }

    /// All 64 bits of what ``hash(_:)`` keeps the top 32 of: a receipt names its device by the
    /// top 48, found by the first 32 (the key every device row holds).
    package static func mixed(_ address: String) -> UInt64 {
        var hash = fnvBasis
        for byte in address.utf8 {
            hash ^= UInt64(byte)
            hash &*= fnvPrime
        }
        return mix(hash)
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
