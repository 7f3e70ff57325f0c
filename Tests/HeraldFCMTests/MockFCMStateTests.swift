import Foundation
import HeraldCore
@testable import HeraldFCMMock
import Testing

/// The mock FCM's tables and routing, as values: the fast paths a send takes (its path read
/// without splitting it, the latest access token compared before the table is looked up, no
/// record made when records are off) answer as the general ones do.
@Suite("Mock FCM state and routing")
struct MockFCMStateTests {
    @Test(
        "a send's path gives its project, and any other path nil (the general route then decides)",
        arguments: [
            ("/v1/projects/herald-mock/messages:send", "herald-mock"),
            ("/v1/projects/p/messages:send", "p"),
            ("/v1/projects//messages:send", nil),
            ("/v1/projects/a/b/messages:send", nil),
            ("/v1/projects/p/messages:sendx", nil),
            ("/v1/projects/p/messages:send/", nil),
            ("//v1/projects/p/messages:send", nil),
            ("/v1/projects/p/messages:validate", nil),
            ("/v1/projects/", nil),
            ("/token", nil),
            ("", nil),
        ] as [(String, String?)])
    func sendProject(path: String, project: String?) {
        #expect(MockFCMRoutes.sendProject(path) == project)
    }

    @Test("the latest access token and an earlier one are both valid until they expire; expiring them refuses both")
    func accessTokens() async throws {
        let state = MockFCMState(maximumRecords: 10)
        #expect(!state.isValid(accessToken: "ya29.none"))
        state.issue("ya29.first", lifetime: .seconds(60))
        state.issue("ya29.second", lifetime: .seconds(60))
        #expect(state.isValid(accessToken: "ya29.second"))
        #expect(state.isValid(accessToken: "ya29.first"))
        #expect(!state.isValid(accessToken: "ya29.secon"))
        state.expireAccessTokens()
        #expect(!state.isValid(accessToken: "ya29.second"))
        #expect(!state.isValid(accessToken: "ya29.first"))
        // The latest token past its lifetime is refused like any other.
        state.issue("ya29.brief", lifetime: .milliseconds(20))
        #expect(state.isValid(accessToken: "ya29.brief"))
        try await Task.sleep(for: .milliseconds(60))
        #expect(!state.isValid(accessToken: "ya29.brief"))
    }

    @Test("with records off a message is counted, numbered and dropped without being made; with records on it is kept")
    func records() {
        let off = MockFCMState(maximumRecords: 0)
        var made = 0
        let numbers = (0..<3).map { _ in
            off.record { number in
                made += 1
                return MockFCMMessage(token: "t", message: .null, name: "n\(number)", httpVersion: 2, receivedAt: .distantPast)
            }
        }
        #expect(numbers == [1, 2, 3] && made == 0)
        #expect(off.receivedCount == 3 && off.received.isEmpty && off.droppedRecordCount == 3)

        let on = MockFCMState(maximumRecords: 2)
        for _ in 0..<3 {
            _ = on.record { number in MockFCMMessage(token: "t\(number)", message: .null, name: "n\(number)", httpVersion: 2, receivedAt: .distantPast) }
        }
        #expect(on.received.map(\.name) == ["n2", "n3"] && on.droppedRecordCount == 1)
    }
}
