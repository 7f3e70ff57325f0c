import HeraldCore
import HeraldHTTP2
import Testing

@testable import HeraldTransport

@Suite("Stream table")
struct StreamTableTests {
    /// A class: its identity shows which entry came back.
    final class Entry {
        let id: HTTP2StreamNumber
        var note = 0
        init(_ id: HTTP2StreamNumber) { self.id = id }
    }

    @Test("against a dictionary: seeded random opens, answers, removals and sweeps, through several growths of the ring")
    func model() {
        var generator = SplitMix64(seed: 0x5EED_0001)
        var table = StreamTable<Entry>(firstStreamID: 1)
        var model: [HTTP2StreamNumber: Entry] = [:]
        var next: HTTP2StreamNumber = 1
        var largest = 0
        for step in 0..<5000 {
            switch generator.next() % 10 {
            case 0...3:
                // Bursts of opens grow the ring past its 64 slots now and then.
                for _ in 0..<Int(generator.next() % (step % 500 == 0 ? 300 : 4)) {
                    let entry = Entry(next)
                    table.append(next, entry)
                    model[next] = entry
                    next += 2
                }
            case 4, 5:
                let id = HTTP2StreamNumber(generator.next() % UInt64(next + 2))
                #expect(table.remove(id) === model.removeValue(forKey: id), "step \(step): remove \(id)")
            case 6:
                let id = HTTP2StreamNumber(generator.next() % UInt64(next + 2))
                let note = Int(generator.next() % 1000)
                let updated = table.update(id) { entry -> Int in
                    entry.note = note
                    return note
                }
                #expect(updated == model[id].map { _ in note }, "step \(step): update \(id)")
            case 7:
                let id = HTTP2StreamNumber(generator.next() % UInt64(next + 2))
                #expect(table[id] === model[id], "step \(step): read \(id)")
                if model[id] != nil, generator.next() % 2 == 0 {
                    _ = table.remove(id)
                    model[id] = nil
                }
            case 8:
                let cut = HTTP2StreamNumber(generator.next() % UInt64(next + 2))
                let removed = table.remove { $0.id < cut }
                let expected = model.keys.filter { $0 < cut }.sorted()
                #expect(removed.map(\.id) == expected, "step \(step): sweep below \(cut)")
                for (id, entry) in removed { #expect(entry === model.removeValue(forKey: id)) }
            default:
                if generator.next() % 50 == 0 {
                    let all = table.removeAll()
                    #expect(Set(all.map(\.id)) == Set(model.keys))
                    model.removeAll()
                }
            }
            largest = max(largest, model.count)
            #expect(table.count == model.count, "step \(step)")
            #expect(table.isEmpty == model.isEmpty)
            #expect(table.first?.id == model.keys.min(), "step \(step): oldest")
        }
        #expect(largest > 128, "the ring grew twice, from 64 slots to 256")
        #expect(table.all.map(\.id) == model.keys.sorted())
        #expect(table.all.allSatisfy { $0.value === model[$0.id] })
    }

    @Test("an update changes the stream in place; a missing or closed stream is not updated")
    func updateInPlace() {
        var table = StreamTable<[Int]>(firstStreamID: 1)
        table.append(1, [1])
        table.append(3, [3])
        #expect(table.update(3) { $0.append(4) } != nil)
        #expect(table[3] == [3, 4])
        #expect(table.remove(1) == [1])
        #expect(table.update(1) { $0.append(9) } == nil && table.update(5) { $0.append(9) } == nil && table.update(2) { _ in } == nil)
        #expect(table.first?.id == 3 && table.count == 1)
        #expect(table.remove(3) == [3, 4] && table.isEmpty && table.first == nil)
        // After everything closed, numbering goes on from the next stream.
        table.append(5, [5])
        #expect(table.first?.id == 5 && table[5] == [5])
    }
}
