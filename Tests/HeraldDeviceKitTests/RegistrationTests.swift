import Foundation
import HeraldDeviceKit
import Testing

@Suite("Registering tokens through the app's backend", .timeLimit(.minutes(1)))
struct RegistrationTests {
    let scratch: Scratch
    let clock = TestClock()
    let token = Data([0x00, 0x0f, 0xab, 0xff] + Array(repeating: 0x42, count: 28))
    let tokenHex = "000fabff" + String(repeating: "42", count: 28)

    init() throws { scratch = try Scratch() }

    func device(_ transport: ScriptedTransport, headers: [String: String] = ["Authorization": "Bearer app-session"]) -> HeraldDevice {
        var configuration = HeraldDevice.Configuration(
            backend: URL(string: "https://api.example.com/me/devices")!, environment: .sandbox, directory: scratch.url, headers: headers
        )
        configuration.locale = "pt-BR"
        configuration.timeZone = "Europe/Lisbon"
        return HeraldDevice(configuration: configuration, transport: transport, now: clock.function)
    }

    @Test("Device tokens are lower-case hex")
    func hex() {
        #expect(HeraldDevice.hex(Data([0x00, 0x0f, 0xab, 0xff])) == "000fabff")
        #expect(HeraldDevice.hex(Data()) == "")
        #expect(HeraldDevice.hex(token) == tokenHex)
        #expect(HeraldDevice.hex(Data(0...255)).count == 512)
    }

    @Test("The device token is PUT to {backend}/{hex token} with the app's headers")
    func requestShape() async throws {
        let transport = ScriptedTransport(status: 204)
        #expect(try await device(transport).register(deviceToken: token) == .sent)
        let request = try #require(transport.requests.first)
        #expect(request.method == .put)
        #expect(request.url.absoluteString == "https://api.example.com/me/devices/" + tokenHex)
        #expect(request.headers["Authorization"] == "Bearer app-session")
        #expect(request.headers["Content-Type"] == "application/json")
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"environment":"sandbox","locale":"pt-BR","timeZone":"Europe/Lisbon"}"#)

        _ = try await device(transport).register(deviceToken: Data([1]), tags: ["news", "sport"])
        #expect(String(decoding: transport.requests[1].body, as: UTF8.self)
            == #"{"environment":"sandbox","locale":"pt-BR","tags":["news","sport"],"timeZone":"Europe/Lisbon"}"#)
    }

    @Test("A registration is sent again only when the token or body changes, or a day has passed")
    func resend() async throws {
        let transport = ScriptedTransport(status: 200)
        let registrar = device(transport)
        #expect(try await registrar.register(deviceToken: token) == .sent)
        #expect(try await registrar.register(deviceToken: token) == .unchanged)
        // What was sent is remembered on disk: a new launch does not send it again.
        #expect(try await device(transport).register(deviceToken: token) == .unchanged)
        #expect(transport.requests.count == 1)

        #expect(try await registrar.register(deviceToken: Data([0x01, 0x02])) == .sent)
        #expect(transport.requests.last?.url.lastPathComponent == "0102")
        #expect(try await registrar.register(deviceToken: Data([0x01, 0x02])) == .unchanged)
        #expect(try await registrar.register(deviceToken: Data([0x01, 0x02]), tags: ["news"]) == .sent)
        #expect(transport.requests.count == 3)

        clock.advance(seconds: 86_399)
        #expect(try await registrar.register(deviceToken: Data([0x01, 0x02]), tags: ["news"]) == .unchanged)
        clock.advance(seconds: 1)
        #expect(try await registrar.register(deviceToken: Data([0x01, 0x02]), tags: ["news"]) == .sent)
        #expect(transport.requests.count == 4)
    }

    @Test("A refused registration throws with its status and is sent again next time")
    func refused() async throws {
        let transport = ScriptedTransport { _, index in
            index == 0 ? HeraldResponse(status: 401, body: Data(#"{"error":"signed out"}"#.utf8)) : HeraldResponse(status: 200)
        }
        let registrar = device(transport)
        let error = await #expect(throws: HeraldDeviceError.self) { try await registrar.register(deviceToken: token) }
        #expect(error?.code == .rejected)
        #expect(error?.status == 401)
        #expect(error?.detail == #"{"error":"signed out"}"#)
        #expect(try await registrar.register(deviceToken: token) == .sent)
    }

    @Test("A network failure throws, and the headers provider's failure throws before sending")
    func failures() async throws {
        let unreachable = device(ScriptedTransport { _, _ in throw Unreachable() })
        let error = await #expect(throws: HeraldDeviceError.self) { try await unreachable.register(deviceToken: token) }
        #expect(error?.code == .transport)

        let transport = ScriptedTransport(status: 200)
        let configuration = HeraldDevice.Configuration(
            backend: URL(string: "https://api.example.com/me/devices")!, environment: .production, directory: scratch.url,
            headers: { throw Unreachable() }
        )
        let signedOut = HeraldDevice(configuration: configuration, transport: transport, now: clock.function)
        let headers = await #expect(throws: HeraldDeviceError.self) { try await signedOut.register(deviceToken: token) }
        #expect(headers?.code == .headers)
        #expect(transport.requests.isEmpty)

        let empty = await #expect(throws: HeraldDeviceError.self) { try await signedOut.register(deviceToken: Data()) }
        #expect(empty?.code == .invalidToken)
    }

    @Test("forgetSentRegistrations makes the next registration go out (a user signed in)")
    func forget() async throws {
        let transport = ScriptedTransport(status: 200)
        let registrar = device(transport)
        _ = try await registrar.register(deviceToken: token)
        try registrar.forgetSentRegistrations()
        #expect(try await registrar.register(deviceToken: token) == .sent)
        #expect(transport.requests.count == 2)
    }

    @Test("Live Activity and push-to-start tokens go to {backend}/activities/{id or type}/{hex token}")
    func activities() async throws {
        let transport = ScriptedTransport(status: 200)
        let registrar = device(transport)
        #expect(try await registrar.register(liveActivity: "7C9D5E7E-1A2B", pushToken: Data([0xab])) == .sent)
        #expect(try await registrar.register(liveActivity: "7C9D5E7E-1A2B", pushToken: Data([0xab])) == .unchanged)
        #expect(try await registrar.register(pushToStartToken: Data([0xcd]), attributesType: "DeliveryAttributes") == .sent)
        // A device token is remembered apart from the activities'.
        #expect(try await registrar.register(deviceToken: Data([0xab])) == .sent)

        let requests = transport.requests
        #expect(requests.map(\.url.absoluteString) == [
            "https://api.example.com/me/devices/activities/7C9D5E7E-1A2B/ab",
            "https://api.example.com/me/devices/activities/DeliveryAttributes/cd",
            "https://api.example.com/me/devices/ab",
        ])
        #expect(String(decoding: requests[0].body, as: UTF8.self) == #"{"environment":"sandbox","kind":"liveActivity"}"#)
        #expect(String(decoding: requests[1].body, as: UTF8.self) == #"{"environment":"sandbox","kind":"pushToStart"}"#)

        let error = await #expect(throws: HeraldDeviceError.self) { try await registrar.register(liveActivity: "", pushToken: Data([1])) }
        #expect(error?.code == .invalidToken)
    }
}
