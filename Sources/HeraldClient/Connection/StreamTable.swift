import HeraldHTTP2
import NIOCore

/// Open streams keyed by stream number, for one side that opens streams in increasing order:
/// a ring where slot `i` holds stream `base + 2i`. Lookup, insert and removal are O(1), and the
/// first entry is always the oldest open stream.
struct StreamTable<Value> {
    private var slots = CircularBuffer<Value?>(initialCapacity: 64)
    private var base: HTTP2StreamNumber
    private(set) var count = 0

    /// - Parameter firstStreamID: the number of the first stream (1 for clients).
    init(firstStreamID: HTTP2StreamNumber) {
        base = firstStreamID
    }

    /// Adds the next stream; `id` must be 2 more than the last one added.
    mutating func append(_ id: HTTP2StreamNumber, _ value: Value) {
        if slots.isEmpty { base = id }
        precondition(id == base + 2 * HTTP2StreamNumber(slots.count), "streams must be added in order")
        slots.append(value)
        count += 1
    }

    subscript(id: HTTP2StreamNumber) -> Value? {
        get {
            guard let index = slot(id) else { return nil }
            return slots[slots.index(slots.startIndex, offsetBy: index)]
        }
        set {
            guard let index = slot(id) else { return }
            let position = slots.index(slots.startIndex, offsetBy: index)
            let had = slots[position] != nil
            slots[position] = newValue
            if had && newValue == nil { count -= 1 } else if !had && newValue != nil { count += 1 }
            trim()
        }
    }

    /// Removes and returns a stream.
    mutating func remove(_ id: HTTP2StreamNumber) -> Value? {
        guard let value = self[id] else { return nil }
        self[id] = nil
        return value
    }

    /// The oldest open stream.
    var first: (id: HTTP2StreamNumber, value: Value)? {
        guard let value = slots.first ?? nil else { return nil }
        return (base, value)
    }

    /// Every open stream, oldest first.
    var all: [(id: HTTP2StreamNumber, value: Value)] {
        var result: [(id: HTTP2StreamNumber, value: Value)] = []
        result.reserveCapacity(count)
        for (offset, value) in slots.enumerated() {
            if let value { result.append((base + 2 * HTTP2StreamNumber(offset), value)) }
        }
        return result
    }

    /// Removes the streams `predicate` picks, oldest first, and returns them with their IDs.
    mutating func remove(where predicate: (Value) -> Bool) -> [(id: HTTP2StreamNumber, value: Value)] {
        var removed: [(id: HTTP2StreamNumber, value: Value)] = []
        var index = slots.startIndex
        var offset: HTTP2StreamNumber = 0
        while index != slots.endIndex {
            if let value = slots[index], predicate(value) {
                removed.append((base + 2 * offset, value))
                slots[index] = nil
                count -= 1
            }
            index = slots.index(after: index)
            offset += 1
        }
        if !removed.isEmpty { trim() }
        return removed
    }

    mutating func removeAll() -> [Value] {
        defer {
            slots.removeAll(keepingCapacity: true)
            count = 0
        }
        return slots.compactMap { $0 }
    }

    var isEmpty: Bool { count == 0 }

    private func slot(_ id: HTTP2StreamNumber) -> Int? {
        guard id >= base, (id - base) % 2 == 0 else { return nil }
        let index = Int((id - base) / 2)
        return index < slots.count ? index : nil
    }

    /// Drops closed streams from the front, so the ring only spans open ones.
    private mutating func trim() {
        while let front = slots.first, front == nil {
            slots.removeFirst()
            base += 2
        }
    }
}
