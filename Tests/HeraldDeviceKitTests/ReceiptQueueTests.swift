import Foundation
import HeraldDeviceKit
import Testing

@Suite("The durable receipt queue", .timeLimit(.minutes(1)))
struct ReceiptQueueTests {
    @Test("What one queue appends, another on the same directory reads")
    func persistsAcrossInstances() throws {
        let scratch = try Scratch()
        let clock = TestClock()
        let writer = HeraldReceiptQueue(directory: scratch.url, now: clock.function)
        try writer.append(receivedEvent(1, date: clock.now))
        try writer.append(HeraldEvent(.clicked(action: "reply"), receipt: receipt(1), date: clock.now))
        try writer.append(HeraldEvent(.opened, receipt: receipt(2), date: clock.now))

        let reader = HeraldReceiptQueue(directory: scratch.url, now: clock.function)
        let events = try reader.pending()
        #expect(events.map(\.kind) == [.received, .clicked(action: "reply"), .opened])
        #expect(events.map(\.receipt.token) == ["r1", "r1", "r2"])
        #expect(events.allSatisfy { $0.date == clock.now })
    }

    @Test("The queue is made in a directory that is not there yet")
    func makesItsDirectory() throws {
        let scratch = try Scratch()
        let queue = HeraldReceiptQueue(directory: scratch.url.appending(components: "group", "herald"))
        #expect(try queue.append(receivedEvent(1, date: Date())))
        #expect(try queue.pending().count == 1)
    }

    @Test("The same receipt, event and action are queued once")
    func deduplicates() throws {
        let scratch = try Scratch()
        let queue = HeraldReceiptQueue(directory: scratch.url)
        let now = Date()
        #expect(try queue.append(HeraldEvent(.clicked(action: "reply"), receipt: receipt(1), date: now)))
        #expect(try !queue.append(HeraldEvent(.clicked(action: "reply"), receipt: receipt(1), date: now.addingTimeInterval(5))))
        #expect(try queue.append(HeraldEvent(.clicked(action: "archive"), receipt: receipt(1), date: now)))
        #expect(try queue.append(HeraldEvent(.opened, receipt: receipt(1), date: now)))
        #expect(try queue.append(HeraldEvent(.clicked(action: "reply"), receipt: receipt(2), date: now)))
        #expect(try queue.pending().count == 4)
    }

    @Test("Past the bound the earliest recorded events are dropped")
    func bound() throws {
        let scratch = try Scratch()
        let queue = HeraldReceiptQueue(directory: scratch.url, limits: .init(maximumEvents: 10))
        let now = Date()
        for number in 0..<15 { try queue.append(receivedEvent(number, date: now)) }
        #expect(try queue.pending().map(\.receipt.token) == (5..<15).map { "r\($0)" })
    }

    @Test("The standard bound is 1,000 events")
    func standardBound() throws {
        let scratch = try Scratch()
        let queue = HeraldReceiptQueue(directory: scratch.url)
        let now = Date()
        for number in 0..<1_005 { try queue.append(receivedEvent(number, date: now)) }
        let events = try queue.pending()
        #expect(events.count == 1_000)
        #expect(events.first?.receipt.token == "r5")
    }

    @Test("Events older than 7 days are dropped, when appended and as they age")
    func age() throws {
        let scratch = try Scratch()
        let clock = TestClock()
        let day: TimeInterval = 86_400
        let queue = HeraldReceiptQueue(directory: scratch.url, now: clock.function)
        #expect(try !queue.append(receivedEvent(1, date: clock.now.addingTimeInterval(-8 * day))))
        #expect(try queue.append(receivedEvent(2, date: clock.now.addingTimeInterval(-6 * day))))
        #expect(try queue.append(receivedEvent(3, date: clock.now)))
        #expect(try queue.pending().map(\.receipt.token) == ["r2", "r3"])

        clock.advance(seconds: 2 * day)
        #expect(try queue.pending().map(\.receipt.token) == ["r3"])
        clock.advance(seconds: 6 * day)
        #expect(try queue.pending().isEmpty)
    }

    @Test("A clicked action's identifier is 1 to 64 bytes")
    func actionLength() throws {
        let scratch = try Scratch()
        let queue = HeraldReceiptQueue(directory: scratch.url)
        #expect(try queue.append(HeraldEvent(.clicked(action: String(repeating: "a", count: 64)), receipt: receipt(1))))
        for action in ["", String(repeating: "a", count: 65), String(repeating: "é", count: 33)] {
            let error = #expect(throws: HeraldDeviceError.self) {
                try queue.append(HeraldEvent(.clicked(action: action), receipt: receipt(2)))
            }
            #expect(error?.code == .invalidAction)
        }
        #expect(try queue.pending().count == 1)
    }

    @Test("Two queues on one directory appending at once lose nothing")
    func concurrentWriters() async throws {
        let scratch = try Scratch()
        let first = HeraldReceiptQueue(directory: scratch.url)
        let second = HeraldReceiptQueue(directory: scratch.url)
        let now = Date()
        let added = try await withThrowingTaskGroup(of: Bool.self) { group in
            for number in 0..<200 {
                group.addTask { try first.append(receivedEvent(number, date: now)) }
                group.addTask { try second.append(receivedEvent(200 + number, date: now)) }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(added == 400)
        let tokens = Set(try HeraldReceiptQueue(directory: scratch.url).pending().map(\.receipt.token))
        #expect(tokens == Set((0..<400).map { "r\($0)" }))
    }

    @Test("A queue file that does not parse is started afresh")
    func corruptFile() throws {
        let scratch = try Scratch()
        try Data("{\"events\":[{\"recei".utf8).write(to: scratch.url.appending(component: "herald-receipts.json"))
        let queue = HeraldReceiptQueue(directory: scratch.url)
        #expect(try queue.pending().isEmpty)
        #expect(try queue.append(receivedEvent(1, date: Date())))
        #expect(try queue.pending().count == 1)
    }

    @Test("removeAll empties the queue")
    func removeAll() throws {
        let scratch = try Scratch()
        let queue = HeraldReceiptQueue(directory: scratch.url)
        try queue.append(receivedEvent(1, date: Date()))
        try queue.removeAll()
        #expect(try queue.pending().isEmpty)
    }
}
