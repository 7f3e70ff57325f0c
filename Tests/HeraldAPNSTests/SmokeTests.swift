import Foundation
import HeraldAPNS
import HeraldCore
import HeraldAPNSMock
import Testing

@Suite("Client against the mock over TLS and HTTP/2")
struct SmokeTests {
    @Test("one notification with token authentication is accepted and recorded by the mock")
    func oneNotification() async throws {
        let fixture = try await MockFixture.start()
        let id = UUID()
        let response = try await withAPNSClient(configuration: fixture.clientConfiguration()) { client in
            try await client.send(notification(to: token(1), apnsID: id))
        }
        #expect(response.apnsID == id.uuidString.lowercased())
        #expect(fixture.server.acceptedCount == 1)
        let record = try #require(fixture.server.accepted.first)
        #expect(record.token == token(1))
        #expect(record.apnsID == id.uuidString.lowercased())
        #expect(record.topic == MockFixture.topic)
        #expect(String(decoding: record.payload, as: UTF8.self) == #"{"aps":{"alert":"Hello"}}"#)
        try await fixture.stop()
    }
}
