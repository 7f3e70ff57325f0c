import HeraldCore
import HeraldFCM
import HeraldFCMMock
import Testing

/// The mock FCM with `validatesMessages` off, as `herald bench fcm` runs it: still the access
/// token, the project, the body's size and global faults; no look at the message.
@Suite("Mock FCM without message validation", .timeLimit(.minutes(2)))
struct MockFCMUnvalidatedTests {
    @Test("the access token and the project are still checked and global faults apply; a message FCM would refuse is accepted")
    func unvalidated() async throws {
        var configuration = MockFCMServer.Configuration()
        configuration.validatesMessages = false
        try await withMockFCMServer(configuration: configuration) { server in
            try await MockFCMServerTests.withHTTP(server) { http in
                let access = try #require(
                    try await MockFCMServerTests.post(
                        http, server.serviceAccount.tokenURI, body: MockFCMServerTests.tokenForm(try FCMAssertion.sign(for: server.serviceAccount)),
                        contentType: "application/x-www-form-urlencoded"
                    ).json?["access_token"]?.stringValue)
                let url = server.origin + "/v1/projects/herald-mock/messages:send"
                let reserved = #"{"message":{"token":"has space","data":{"from":1}}}"#
                let accepted = try await MockFCMServerTests.post(http, url, body: reserved, contentType: "application/json", bearer: access)
                #expect(accepted.status == 200 && accepted.json?["name"] == "projects/herald-mock/messages/1")
                #expect(try await MockFCMServerTests.post(http, url, body: reserved, contentType: "application/json", bearer: "ya29.forged").status == 401)
                let otherProject = server.origin + "/v1/projects/someone-else/messages:send"
                #expect(try await MockFCMServerTests.post(http, otherProject, body: reserved, contentType: "application/json", bearer: access).status == 403)
                server.scriptAll(.unavailable(times: 1))
                #expect(try await MockFCMServerTests.post(http, url, body: reserved, contentType: "application/json", bearer: access).status == 503)
                #expect(server.receivedCount == 1 && server.received.first?.token == "")
            }
        }
    }
}
