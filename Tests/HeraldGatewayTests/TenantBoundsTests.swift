import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

@testable import HeraldGateway

/// One tenant cannot take more than its share: a request rate per API key, a bound on one
/// import's body.
@Suite("Tenant bounds", .timeLimit(.minutes(6)))
struct TenantBoundsTests {
    @Test("a key past its burst gets 429 with Retry-After; another key is not slowed")
    func rateLimit() async throws {
        try await RouterHarness.run(configure: { $0.limits.requestsPerSecondPerKey = 1; $0.limits.requestBurstPerKey = 3 }) { api in
            let path = "/v1/apps/\(appID)/devices"
            for _ in 0..<3 { #expect(try await api.call(.get, path).status == 200) }
            // The next is refused, unless the machine was so slow that a second passed and a
            // token came back: then one of the next few is (the limit, not a timing, is tested).
            var refused = try await api.call(.get, path)
            for _ in 0..<10 where refused.status == 200 { refused = try await api.call(.get, path) }
            #expect(refused.status == 429)
            #expect(refused.json?["error"]?["code"]?.stringValue == "tooManyRequests")
            #expect(refused.headers[.retryAfter] == "1")
            // The other key has its own bucket (403 is its answer for this app: it got past the limiter).
            #expect(try await api.call(.get, "/v1/apps/other/devices", key: api.otherKey).status == 200)
            // Probes are not counted against anyone.
            #expect(try await api.call(.get, "/healthz", key: .some(nil)).status == 200)
        }
    }

    @Test("an app at limits.maximumPendingPerApp gets 429 on a new notification; its queued ones count at once; another app is not held back")
    func pendingCap() async throws {
        try await RouterHarness.run(configure: { $0.limits.maximumPendingPerApp = 3 }) { api in
            for number in 0..<3 {
                #expect(try await api.call(.put, "/v1/apps/\(appID)/devices/\(token(number))", body: "").status == 201)
            }
            let body = #"{"to": {"all": true}, "payload": {"aps": {"alert": "x"}}}"#
            // Router mode runs no workers: the three devices stay pending.
            #expect(try await api.call(.post, "/v1/apps/\(appID)/notifications", body: body).status == 202)
            let refused = try await api.call(.post, "/v1/apps/\(appID)/notifications", body: body)
            #expect(refused.status == 429)
            #expect(refused.headers[.retryAfter] == "10")
            #expect(refused.json?["error"]?["message"]?.stringValue?.contains("maximumPendingPerApp") == true)
            #expect(try await api.call(.post, "/v1/apps/other/notifications", body: body, key: api.otherKey).status == 202)
        }
    }

    @Test("a token bucket refills at its rate up to its burst, and says how long to wait when empty")
    func bucket() {
        let start = ContinuousClock.now
        var bucket = RateLimiter.Bucket(tokens: 2, updated: start)
        #expect(bucket.take(now: start, rate: 10, burst: 2) == nil)
        #expect(bucket.take(now: start, rate: 10, burst: 2) == nil)
        #expect(bucket.take(now: start, rate: 10, burst: 2) == .milliseconds(100))
        #expect(bucket.take(now: start + .milliseconds(100), rate: 10, burst: 2) == nil)
        // A long pause refills to the burst, not beyond.
        #expect(bucket.take(now: start + .seconds(60), rate: 10, burst: 2) == nil)
        #expect(bucket.take(now: start + .seconds(60), rate: 10, burst: 2) == nil)
        #expect(bucket.take(now: start + .seconds(60), rate: 10, burst: 2) != nil)
    }

    @Test("an import past limits.maximumImportSize is a 413 saying how many devices before it were registered; they are", arguments: Backend.allCases)
    func importSize(backend: Backend) async throws {
        try await RouterHarness.run(backend: backend, configure: { $0.limits.maximumImportSize = 8192 }) { api in
            let lines = (0..<500).map { #"{"token": "\#(token($0))", "user": "u\#($0)"}"# + "\n" }.joined()
            let answer = try await api.call(.post, "/v1/apps/\(appID)/devices", body: lines, contentType: "application/x-ndjson")
            #expect(answer.status == 413)
            let message = try #require(answer.json?["error"]?["message"]?.stringValue)
            #expect(message.contains("maximumImportSize"))
            let registered = try #require(Int(message.split(separator: "the ").dropFirst().first?.split(separator: " ").first ?? ""))
            #expect(registered > 0 && registered < 500)
            let listed = try await api.call(.get, "/v1/apps/\(appID)/devices?limit=1000")
            guard case .array(let devices) = listed.json?["devices"] ?? .null else { Issue.record("no list"); return }
            #expect(devices.count == registered)
            // Under the limit, the same import is whole.
            let small = (0..<20).map { #"{"token": "\#(token($0))"}"# + "\n" }.joined()
            #expect(try await api.call(.post, "/v1/apps/\(appID)/devices", body: small, contentType: "application/x-ndjson").json?.count("upserted") == 20)
        }
    }
}
