import HeraldCore
import Testing

/// The library example of README.md, kept compiling and correct. Change both together.
@Suite("README example")
struct ReadmeExampleTests {
    @Test("builds, validates and renders the request shown in the README")
    func readmeExample() throws {
        // README: begin
        var aps = APS(alert: .titled("Order shipped", body: "Arrives Tuesday"), badge: 1, sound: .default)
        aps.interruptionLevel = .timeSensitive
        var payload = Payload(aps: aps)
        try payload.setCustom("orderID", 4242)
        let body = try payload.encode(fittingIn: PushType.alert.maximumPayloadSize)  // encoded once, shared

        let notification = PushNotification(
            token: try DeviceToken("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
            headers: PushHeaders(pushType: .alert, topic: "com.example.app"),
            payload: body
        )
        try notification.validate()  // refuses what APNs would refuse, with APNs's reason

        let issuer = ProviderTokenIssuer.shared(for: ProviderKey.generate())  // or ProviderKey(contentsOfFile:keyID:teamID:)
        let request = notification.request(authorization: try issuer.currentToken().authorization)
        // README: end
        #expect(request.path == "/3/device/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
        #expect(body.string == #"{"aps":{"alert":{"title":"Order shipped","body":"Arrives Tuesday"},"badge":1,"sound":"default","interruption-level":"time-sensitive"},"orderID":4242}"#)
    }
}
