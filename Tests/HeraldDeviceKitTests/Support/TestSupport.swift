import Foundation
import HeraldDeviceKit
import Synchronization

/// A directory for one test's files, removed with the value.
final class Scratch {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appending(component: "herald-devicekit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let time: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_750_000_000)) { time = Mutex(start) }

    var now: Date { time.withLock { $0 } }
    var function: @Sendable () -> Date { { self.now } }

    func advance(seconds: TimeInterval) { time.withLock { $0 += seconds } }
}

/// A transport that records each request and answers as the test says.
final class ScriptedTransport: HeraldTransport {
    private let recorded = Mutex<[HeraldRequest]>([])
    private let answer: @Sendable (HeraldRequest, Int) async throws -> HeraldResponse

    /// Answers the request numbered `index` (from 0) with `answer`.
    init(_ answer: @escaping @Sendable (_ request: HeraldRequest, _ index: Int) async throws -> HeraldResponse) {
        self.answer = answer
    }

    /// Answers every request with `status`.
    convenience init(status: Int, headers: [String: String] = [:]) {
        self.init { _, _ in HeraldResponse(status: status, headers: headers) }
    }

    var requests: [HeraldRequest] { recorded.withLock { $0 } }

    func send(_ request: HeraldRequest) async throws -> HeraldResponse {
        let index = recorded.withLock { requests in
            requests.append(request)
            return requests.count - 1
        }
        return try await answer(request, index)
    }
}

/// No answer came.
struct Unreachable: Error {}

/// One event of a receipt request's body.
struct WireEvent: Decodable, Hashable {
    var receipt: String
    var event: String
    var action: String?
}

extension HeraldRequest {
    /// The events of a `POST /v1/receipts` body.
    var events: [WireEvent] {
        struct Body: Decodable { var events: [WireEvent] }
        return (try? JSONDecoder().decode(Body.self, from: body))?.events ?? []
    }
}

/// A receipt for event number `number`: distinct tokens of the base64url alphabet.
func receipt(_ number: Int) -> HeraldReceipt {
    HeraldReceipt(token: "r\(number)")!
}

func receivedEvent(_ number: Int, date: Date) -> HeraldEvent {
    HeraldEvent(.received, receipt: receipt(number), date: date)
}

let gatewayURL = URL(string: "https://push.example.com/herald")!

/// A value tests share between tasks and closures.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    var value: Value {
        get { mutex.withLock { $0 } }
        set { mutex.withLock { $0 = newValue } }
    }
}
