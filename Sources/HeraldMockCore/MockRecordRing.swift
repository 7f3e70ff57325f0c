/// The latest `capacity` elements, oldest first: appending past it overwrites the oldest and
/// counts it as dropped. Shared by the Web Push and FCM mocks.
package struct MockRecordRing<Element: Sendable>: Sendable {
    package let capacity: Int
    private var storage: [Element] = []
    /// Where the oldest element is once the ring is full.
    private var head = 0
    /// Elements overwritten since the start.
    package private(set) var droppedCount = 0

    package init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    package mutating func append(_ element: Element) {
        guard capacity > 0 else {
            droppedCount += 1
            return
        }
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[head] = element
            head = (head + 1) % capacity
            droppedCount += 1
        }
    }

    /// Appends the element `make` makes, made only when the ring keeps elements: a mock with
    /// records off makes none (a record costs a clock read and a copy of the message).
    package mutating func append(making make: () -> Element) {
        guard capacity > 0 else {
            droppedCount += 1
            return
        }
        append(make())
    }

    /// The elements held, oldest first.
    package var elements: [Element] {
        Array(storage[head...] + storage[..<head])
    }

    package var count: Int { storage.count }

    package mutating func removeAll() {
        storage = []
        head = 0
    }
}
