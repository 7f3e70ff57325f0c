import Foundation
import HTTPTypes
import HeraldCore
@testable import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Logging
import Testing

/// The receipts route is public: what a hostile client sends it must cost little, be refused with
/// a 4xx, and never hold up another app's sending.
@Suite("Receipts under attack", .timeLimit(.minutes(4)))
struct ReceiptHostileTests {
    /// A receipt of a real delivery with its MAC replaced by random bytes: well formed, naming a
    /// real notification and device, so each one costs the gateway a lookup and a MAC.
    static func forged(from receipt: String) -> String {
        var bytes = Base64URL.decode(receipt) ?? []
        for index in ReceiptToken.signedPrefix..<bytes.count { bytes[index] = UInt8.random(in: 0...255) }
        return Base64URL.encode(bytes)
    }

    @Test("a flood of forged receipts from 32 connections at once is refused 403, never 5xx, while a notification to 200 devices is sent in full; a body trickling in is cut off")
    func flood() async throws {
        try await GatewayHarness.run(.sqlite, gateway: { $0.limits.minimumBodyRate = 100_000 }) { harness in
            try await harness.register(1...200)
            let seed = try await harness.send(["tokens": [.string(token(1))]], alert: "seed")
            _ = try await harness.waitUntilDone(seed)
            let real = try #require(ReceiptGatewayTests.receipts(harness)[token(1)])
            let body = Array(JSONValue.object(["events": .array((0..<100).map { _ in ["receipt": .string(Self.forged(from: real)), "event": "opened"] })]).jsonString.utf8)
            var counted: [Int: Int] = [:]
            try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<32 {
                    group.addTask {
                        var statuses: [Int] = []
                        for _ in 0..<10 { statuses.append(try await harness.raw(.post, "/v1/receipts", body, key: nil).status) }
                        return statuses
                    }
                }
                // Meanwhile another notification goes to 200 devices.
                group.addTask {
                    let id = try await harness.send(["tokens": .array((1...200).map { .string(token($0)) })], alert: "during")
                    let done = try await harness.waitUntilDone(id)
                    #expect(done.count("accepted") == 200, "\(done.jsonString)")
                    return []
                }
                for try await statuses in group {
                    for status in statuses { counted[status, default: 0] += 1 }
                }
            }
            #expect(counted.keys.allSatisfy { $0 == 403 || $0 == 429 }, "\(counted)")
            #expect(counted.values.reduce(0, +) == 320)
            #expect(harness.received(alert: "during").count == 200)
            let seedNotification = try #require(try await harness.call(.get, "/v1/notifications/\(seed)").json)
            #expect(seedNotification["receipts"]?["opened"]?.intValue == 0, "no forged receipt counted")

            // A body that trickles in is cut off like any other route's.
            let connection = try await RawConnection.connect(port: harness.port)
            try await connection.send("POST /v1/receipts HTTP/1.1\r\nHost: x\r\nContent-Length: 30000\r\n\r\n{")
            let closed = await connection.trickleUntilClosed()
            #expect(closed, "a receipt body below minimumBodyRate is cut off")
            await connection.close()
        }
    }

    @Test("one address may report its rate of receipts and its burst; past them it waits (Retry-After), while another address reports at once; the table of addresses is bounded")
    func perAddress() {
        let throttle = ReceiptThrottle(perSecond: 100, burst: 1000)
        let start = ContinuousClock.now
        #expect(throttle.take(1000, from: 1, now: start) == nil, "the burst at once")
        #expect(throttle.take(0, from: 1, now: start) != nil, "none left: refused before its body is read")
        let wait = throttle.take(50, from: 1, now: start)
        #expect(wait == .milliseconds(500), "50 receipts at 100 a second")
        #expect(throttle.take(1000, from: 2, now: start) == nil, "another address has its own")
        #expect(throttle.take(50, from: 1, now: start + .milliseconds(500)) == nil, "refilled at the rate")
        #expect(throttle.take(1, from: nil, now: start) == nil, "no IP address: not limited")
        // More addresses than the table holds: the idle ones are forgotten, and it stays bounded.
        for peer in 10..<(10 + ReceiptThrottle.maximumAddresses + 5) { _ = throttle.take(1, from: peer, now: start + .seconds(20)) }
        #expect(throttle.take(1000, from: 1, now: start + .seconds(20)) == nil, "an address forgotten starts again with its burst")
    }

    @Test("receipts waiting to be stored are bounded: a request past the bound is refused at once, and taken again once there is room")
    func waitingBound() async throws {
        try await GatewayHarness.run(.sqlite) { harness in
            let api = harness.gateway.api
            let ingester = ReceiptIngester(
                store: harness.gateway.store, live: api.live, keyring: api.receiptKeys, metrics: api.metrics, logger: Logger(label: "test"), maximumWaiting: 150)
            let item = ReceiptIngester.Incoming(receipt: "not-a-receipt", event: .opened, action: "")
            #expect(await !ingester.hasRoom(for: 151))
            await #expect(throws: ReceiptBacklogFull.self) { try await ingester.take(Array(repeating: item, count: 151)) }
            let verdicts = try await ingester.take(Array(repeating: item, count: 150))
            #expect(verdicts == Array(repeating: .refused(.malformed), count: 150))
            // Many at once: each is answered or refused for room, nothing else.
            var answered = 0
            var full = 0
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        do {
                            _ = try await ingester.take(Array(repeating: item, count: 100))
                            return true
                        } catch is ReceiptBacklogFull {
                            return false
                        }
                    }
                }
                for try await taken in group { if taken { answered += 1 } else { full += 1 } }
            }
            #expect(answered + full == 20 && answered >= 1)
            #expect(await ingester.hasRoom(for: 150), "nothing is left waiting")
        }
    }
}
