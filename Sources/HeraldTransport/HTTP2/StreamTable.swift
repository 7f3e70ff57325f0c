import HeraldHTTP2

/// Open streams keyed by stream number, for one side that opens streams in increasing order:
/// a ring where slot `i` holds stream `base + 2i`. Lookup, insert and removal are O(1), and the
/// first entry is always the oldest open stream.
///
/// The ring is an array of its own, not a `CircularBuffer`: an array's slot can be changed and
/// emptied in place, where `CircularBuffer`'s subscript copies its element out and back. A
/// stream's entry holds its job and the answer's fields, and those copies (out to read, out and
/// back to record the answer, out to remove it, and the oldest's to trim) were 5 % of the
/// client's event loop.
struct StreamTable<Value> {
    /// `slots[(head + i) & (slots.count - 1)]` is slot `i`, for `i` below `span`; `nil` once its
    /// stream closed. The capacity is a power of two.
    private var slots = ContiguousArray<Value?>(repeating: nil, count: 64)
    private var head = 0
    /// Slots from the oldest open stream to the newest (closed ones between them included).
    private var span = 0
    private var base: HTTP2StreamNumber
    private(set) var count = 0

    /// - Parameter firstStreamID: the number of the first stream (1 for clients).
    init(firstStreamID: HTTP2StreamNumber) {
        base = firstStreamID
    }

    /// Adds the next stream; `id` must be 2 more than the last one added.
    mutating func append(_ id: HTTP2StreamNumber, _ value: consuming Value) {
        if span == 0 { base = id }
        precondition(id == base + 2 * HTTP2StreamNumber(span), "streams must be added in order")
        if span == slots.count { grow() }
        slots[position(span)] = value
        span += 1
        count += 1
    }

    /// The open stream `id` (read only: ``update(_:_:)`` changes it in place, ``remove(_:)`` ends it).
    subscript(id: HTTP2StreamNumber) -> Value? {
        guard let offset = offset(id) else { return nil }
        return slots[position(offset)]
    }

    /// Changes the open stream `id` in place and returns what `body` returns; `nil`, without
    /// calling it, when no stream `id` is open.
    mutating func update<Result>(_ id: HTTP2StreamNumber, _ body: (inout Value) -> Result) -> Result? {
        guard let offset = offset(id) else { return nil }
        let position = position(offset)
        guard slots[position] != nil else { return nil }
        return body(&slots[position]!)
    }

    /// Removes and returns a stream.
    mutating func remove(_ id: HTTP2StreamNumber) -> Value? {
        guard let offset = offset(id), let value = slots[position(offset)].take() else { return nil }
        count -= 1
        trim()
        return value
    }

    /// The oldest open stream.
    var first: (id: HTTP2StreamNumber, value: Value)? {
        // Trimmed: when any slot is in use, the first holds an open stream.
        guard span > 0, let value = slots[head] else { return nil }
        return (base, value)
    }

    /// Every open stream, oldest first.
    var all: [(id: HTTP2StreamNumber, value: Value)] {
        var result: [(id: HTTP2StreamNumber, value: Value)] = []
        result.reserveCapacity(count)
        for offset in 0..<span {
            if let value = slots[position(offset)] { result.append((base + 2 * HTTP2StreamNumber(offset), value)) }
        }
        return result
    }

    /// Removes the streams `predicate` picks, oldest first, and returns them with their IDs.
    mutating func remove(where predicate: (Value) -> Bool) -> [(id: HTTP2StreamNumber, value: Value)] {
        var removed: [(id: HTTP2StreamNumber, value: Value)] = []
        for offset in 0..<span {
            let position = position(offset)
            guard let picked = slots[position].map(predicate), picked, let value = slots[position].take() else { continue }
            removed.append((base + 2 * HTTP2StreamNumber(offset), value))
            count -= 1
        }
        if !removed.isEmpty { trim() }
        return removed
    }

    mutating func removeAll() -> [Value] {
        var values: [Value] = []
        values.reserveCapacity(count)
        for offset in 0..<span {
            if let value = slots[position(offset)].take() { values.append(value) }
        }
        span = 0
        count = 0
        return values
    }

    var isEmpty: Bool { count == 0 }

    private func offset(_ id: HTTP2StreamNumber) -> Int? {
        guard id >= base, (id - base) % 2 == 0 else { return nil }
        let offset = Int((id - base) / 2)
        return offset < span ? offset : nil
    }

    private func position(_ offset: Int) -> Int {
        (head + offset) & (slots.count - 1)
    }

    /// Twice the slots, the span moved to their start.
    private mutating func grow() {
        var larger = ContiguousArray<Value?>(repeating: nil, count: slots.count * 2)
        for offset in 0..<span { larger[offset] = slots[position(offset)].take() }
        slots = larger
        head = 0
    }

    /// Drops closed streams from the front, so the ring only spans open ones.
    private mutating func trim() {
        while span > 0, slots[head] == nil {
            head = (head + 1) & (slots.count - 1)
            span -= 1
            base += 2
        }
    }
}
