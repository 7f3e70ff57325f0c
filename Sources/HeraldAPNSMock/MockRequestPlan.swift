/// The connection-level part of a mock's script, read once per connection: what happens when
/// the request at a given position arrives (apns-spec §1.3's GOAWAY and stream-limit changes, and
/// a dropped connection).
struct MockConnectionScript: Sendable {
    var goAway: (count: Int, reason: String)?
    var drop: Int?
    var limits: [(afterStreams: Int, limit: Int)]

    static let none = MockConnectionScript(goAway: nil, drop: nil, limits: [])

    enum Event: Equatable {
        case none
        /// GOAWAY before this request, with `{"reason": …}`; it and later ones are not processed.
        case goAway(reason: String)
        /// Close the TCP connection, answering nothing.
        case dropConnection
        /// Send SETTINGS with these stream limits, in order, then go on.
        case changeLimits([Int])
    }

    /// What happens when the request at `index` (0-based, counted on this connection) arrives.
    func event(at index: Int) -> Event {
        if let goAway, index == goAway.count { return .goAway(reason: goAway.reason) }
        if let drop, index == drop { return .dropConnection }
        let changes = limits.filter { $0.afterStreams == index }.map(\.limit)
        return changes.isEmpty ? .none : .changeLimits(changes)
    }
}

/// What the mock does with a request, given the fault scripted for its token. Pure: the handler
/// performs it.
enum MockRequestPlan: Equatable {
    /// Close the TCP connection, answering nothing.
    case dropConnection
    /// GOAWAY whose last stream is the one before this request.
    case goAway(reason: String)
    /// Reset with REFUSED_STREAM, unprocessed: the client may send it again.
    case refuse
    /// Take the request. `newStreamLimit`: send SETTINGS with it first. `answerBeforeBody`: answer
    /// as soon as the headers are in, then reset with NO_ERROR; otherwise answer once the request
    /// is whole (or later, or never, as ``MockFault/delay(_:)`` and ``MockFault/noResponse`` say).
    case accept(newStreamLimit: Int?, answerBeforeBody: Bool)

    init(fault: MockFault?) {
        switch fault {
        case .dropConnection: self = .dropConnection
        case .goAway(let reason): self = .goAway(reason: reason)
        case .refuseStream: self = .refuse
        case .setMaximumConcurrentStreams(let limit): self = .accept(newStreamLimit: limit, answerBeforeBody: false)
        case .answerBeforeBody: self = .accept(newStreamLimit: nil, answerBeforeBody: true)
        case .reject, .delay, .noResponse, nil: self = .accept(newStreamLimit: nil, answerBeforeBody: false)
        }
    }
}
