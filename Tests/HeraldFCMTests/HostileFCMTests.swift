import Foundation
import HeraldCore
import HeraldFCM
import HeraldFCMMock
import HeraldHostilePeers
import HeraldTestSupport
import NIOSSL
import Synchronization
import Testing

/// The FCM client against push services that are not FCM: an HTTP/2 server written frame by
/// frame that answers out of order or cuts its answers off, and an independent HTTP/1.1-only
/// server (Python's standard library). The OAuth token comes from the mock FCM; the messages go
/// to the hostile server. Every message comes back with one outcome of its own; nothing traps.
@Suite("FCM client against hostile push services", .timeLimit(.minutes(3)))
struct HostileFCMTests {
    static let fast = FCMRetryPolicy(maximumAttempts: 3, backoff: Backoff(initial: .milliseconds(10), maximum: .milliseconds(50)), maximumRetryAfterSeconds: 1)

    static func token(_ n: Int) -> String { "device-\(n):APA91b" + String(repeating: "h", count: 40) }

    /// Sends one message to each of `count` tokens at `endpoint`, with the mock's access tokens.
    static func send(
        to endpoint: String, trusting roots: [NIOSSLCertificate], count: Int, retry: FCMRetryPolicy = fast
    ) async throws -> [Result<FCMReceipt, FCMSendError>] {
        try await withMockFCMServer { tokens in
            var configuration = FCMClient.Configuration(serviceAccount: tokens.serviceAccount)
            configuration.endpoint = endpoint
            configuration.additionalTrustRoots = [tokens.certificateAuthority] + roots
            configuration.retry = retry
            configuration.requestTimeout = .seconds(5)
            configuration.connectTimeout = .seconds(5)
            return try await withFCMClient(configuration: configuration) { client in
                await client.send(FCMMessage(token: Self.token(0), notification: .init(title: "Score", body: "2-1")), toEach: (0..<count).map(Self.token))
            }
        }
    }

    /// The registration token a request's body names (FCM's `message.token`).
    static func token(in body: [UInt8]) -> String {
        (try? JSONValue(parsing: body))?["message"]?["token"]?.stringValue ?? "?"
    }

    @Test("answers in the reverse order of the requests: each message gets the name made for its own token")
    func outOfOrder() async throws {
        let count = 6
        let held = Mutex<[HostileHTTP2Server.Request]>([])
        let server = try HostileHTTP2Server.answering { request, writer in
            let ready = held.withLock { held -> [HostileHTTP2Server.Request] in
                held.append(request)
                guard held.count == count else { return [] }
                defer { held.removeAll() }
                return held.reversed()
            }
            for request in ready {
                writer.headers([(":status", "200"), ("content-type", "application/json")], streamID: request.streamID, endStream: false)
                writer.data(Array(#"{"name": "projects/p/messages/\#(Self.token(in: request.body))"}"#.utf8), streamID: request.streamID)
            }
        }
        try await server.start()
        let results = try await Self.send(to: "https://127.0.0.1:\(server.port)", trusting: server.trustRoots, count: count)
        for (index, result) in results.enumerated() {
            #expect((try? result.get())?.name == "projects/p/messages/\(Self.token(index))", "\(index): \(result)")
        }
        try await server.stop()
    }

    @Test("an answer cut off mid-way (headers, then the connection closed) is sent again on a new connection; each message has one outcome")
    func cutOff() async throws {
        let seen = Mutex<[String: Int]>([:])
        let server = try HostileHTTP2Server.answering { request, writer in
            let token = Self.token(in: request.body)
            let times = seen.withLock { seen -> Int in
                seen[token, default: 0] += 1
                return seen[token]!
            }
            if times == 1 {
                writer.headers([(":status", "200"), ("content-type", "application/json")], streamID: request.streamID, endStream: false)
                writer.data(Array(#"{"name": "projects/p/mess"#.utf8), streamID: request.streamID, endStream: false)
                writer.closesConnection = true
            } else {
                writer.headers([(":status", "200"), ("content-type", "application/json")], streamID: request.streamID, endStream: false)
                writer.data(Array(#"{"name": "projects/p/messages/\#(token)"}"#.utf8), streamID: request.streamID)
            }
        }
        try await server.start()
        let results = try await Self.send(to: "https://127.0.0.1:\(server.port)", trusting: server.trustRoots, count: 4)
        #expect(results.count == 4)
        for (index, result) in results.enumerated() {
            switch result {
            case .success(let receipt):
                #expect(receipt.name == "projects/p/messages/\(Self.token(index))")
            case .failure(let error):
                // Every attempt cut off: the transport's reason, within the attempts allowed.
                #expect(error.code == .connectionFailed || error.code == .timedOut, "\(error)")
                #expect(error.attempts <= Self.fast.maximumAttempts, "\(error)")
            }
        }
        #expect(results.contains { (try? $0.get()) != nil }, "a message cut off once is delivered on a new connection: \(results)")
        #expect(server.connectionCount >= 2, "a new connection after the cut")
        try await server.stop()
    }

    @Test("a push service that speaks only HTTP/1.1: every message fails with a reason that says so, once, and nothing traps")
    func http1Only() async throws {
        if let reason = HTTP1PushService.unavailableReason {
            if HTTP1PushService.isRequired { Issue.record(Comment(rawValue: reason)) }
            try Test.cancel(Comment(rawValue: reason))
        }
        let (service, authority) = try HTTP1PushService.started(.accept)
        defer { service.stop() }
        let results = try await Self.send(to: service.origin, trusting: [authority], count: 3)
        #expect(results.count == 3)
        for result in results {
            guard case .failure(let error) = result else {
                Issue.record("accepted over HTTP/1.1: \(result)")
                continue
            }
            #expect(error.code == .connectionFailed, "\(error)")
            #expect(error.reason.contains("HTTP/2"), "the reason says what is missing: \(error.reason)")
        }
        #expect(service.received.isEmpty, "no request was sent over a protocol FCM does not speak")
    }
}
