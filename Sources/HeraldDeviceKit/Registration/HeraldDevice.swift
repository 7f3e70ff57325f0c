import Foundation

/// Registers the device's push tokens with the app's own backend, which forwards them to the
/// gateway (`PUT /v1/apps/{app}/devices/{token}`) with its API key and the user it authenticated.
///
/// The kit never holds a gateway API key: a key shipped in an app can be extracted from it, and
/// even a key that could only register devices would let anyone register a device for any user.
/// The backend already knows who the user is; it is the one to say so to the gateway.
///
/// A registration is sent when the token or what is sent with it changed, and otherwise at most
/// once per ``Configuration/resendInterval``: calling ``register(deviceToken:tags:)`` on every
/// launch is cheap. What was last sent is remembered in a small file in
/// ``Configuration/directory``.
public final class HeraldDevice: Sendable {
    /// Which APNs environment the app's tokens belong to: sandbox for development-signed
    /// builds (Xcode), production for TestFlight and the App Store.
    public enum Environment: String, Sendable, Hashable, Codable {
        /// `api.sandbox.push.apple.com`: builds signed for development.
        case sandbox
        /// `api.push.apple.com`: TestFlight and App Store builds.
        case production
    }

    /// What a registration call did.
    public enum Outcome: Sendable, Hashable {
        /// The backend took the registration (2xx).
        case sent
        /// The same token and body were sent within the resend interval; nothing was sent.
        case unchanged
    }

    /// Where to register, and what to say about the device.
    public let configuration: Configuration

    private let transport: any HeraldTransport
    private let ledger: SharedFile<RegistrationLedger>
    private let now: @Sendable () -> Date

    /// A registrar with `configuration`, sending through `transport`.
    ///
    /// - Parameter now: the clock for the resend interval; tests move it.
    public init(
        configuration: Configuration, transport: any HeraldTransport = URLSessionTransport(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.transport = transport
        self.ledger = SharedFile(directory: configuration.directory, name: "herald-registrations")
        self.now = now
    }

    /// Registers the APNs device token (what `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`
    /// hands over): `PUT {backend}/{hex token}` with
    /// `{"environment", "locale", "timeZone", "tags"}` (`tags` only when given).
    @discardableResult
    public func register(deviceToken: Data, tags: [String]? = nil) async throws(HeraldDeviceError) -> Outcome {
        let body = DeviceBody(environment: configuration.environment, locale: configuration.locale, timeZone: configuration.timeZone, tags: tags)
        return try await register(key: "device", token: deviceToken, path: [], body: body)
    }

    /// Registers a Live Activity's push token (`Activity.pushTokenUpdates`):
    /// `PUT {backend}/activities/{activity ID}/{hex token}` with `{"kind": "liveActivity", "environment"}`.
    @discardableResult
    public func register(liveActivity activityID: String, pushToken: Data) async throws(HeraldDeviceError) -> Outcome {
        guard !activityID.isEmpty else { throw HeraldDeviceError(.invalidToken, detail: "the activity identifier is empty") }
        let body = ActivityBody(kind: "liveActivity", environment: configuration.environment)
        return try await register(key: "liveActivity/" + activityID, token: pushToken, path: ["activities", activityID], body: body)
    }

    /// Registers a push-to-start token (`Activity<Attributes>.pushToStartTokenUpdates`), which
    /// belongs to an attributes type rather than to one activity:
    /// `PUT {backend}/activities/{attributes type}/{hex token}` with `{"kind": "pushToStart", "environment"}`.
    @discardableResult
    public func register(pushToStartToken: Data, attributesType: String) async throws(HeraldDeviceError) -> Outcome {
        guard !attributesType.isEmpty else { throw HeraldDeviceError(.invalidToken, detail: "the attributes type is empty") }
        let body = ActivityBody(kind: "pushToStart", environment: configuration.environment)
        return try await register(key: "pushToStart/" + attributesType, token: pushToStartToken, path: ["activities", attributesType], body: body)
    }

    /// Forgets what was sent, so the next registration of each token is sent again: call it
    /// when the user signs in or out, since the backend files the device under the user.
    public func forgetSentRegistrations() throws(HeraldDeviceError) {
        try ledger.update { ledger in ledger = RegistrationLedger() }
    }

    /// A push token as the gateway and APNs spell it: lower-case hexadecimal.
    public static func hex(_ token: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(token.count * 2)
        for byte in token {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private func register(key: String, token: Data, path: [String], body: some Encodable) async throws(HeraldDeviceError) -> Outcome {
        guard !token.isEmpty else { throw HeraldDeviceError(.invalidToken, detail: "the push token is empty") }
        let hex = Self.hex(token)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do { data = try encoder.encode(body) } catch { throw HeraldDeviceError(.invalidToken, detail: "cannot encode the registration: \(error)") }
        let sent = RegistrationLedger.Entry(token: hex, body: RegistrationLedger.digest(data), sentAt: 0)
        let interval = configuration.resendInterval.timeInterval
        let current = try ledger.update { ledger in ledger?.isCurrent(key, sent, now: now(), interval: interval) ?? false }
        if current { return .unchanged }

        let headers: [String: String]
        do { headers = try await configuration.headers() } catch { throw HeraldDeviceError(.headers, detail: "\(error)") }
        var url = configuration.backend
        for component in path + [hex] { url = url.appending(component: component) }
        var request = HeraldRequest(method: .put, url: url, headers: headers, body: data)
        request.headers["Content-Type"] = "application/json"
        let response: HeraldResponse
        do {
            response = try await transport.send(request)
        } catch let error as HeraldDeviceError {
            throw error
        } catch {
            throw HeraldDeviceError(.transport, detail: "\(error)")
        }
        guard (200..<300).contains(response.status) else {
            let text = String(decoding: response.body.prefix(256), as: UTF8.self)
            throw HeraldDeviceError(.rejected, status: response.status, detail: text.isEmpty ? nil : text)
        }
        var entry = sent
        entry.sentAt = now().timeIntervalSince1970
        try ledger.update { ledger in
            var updated = ledger ?? RegistrationLedger()
            updated.record(key, entry)
            ledger = updated
        }
        return .sent
    }
}

/// `PUT {backend}/{token}`'s body.
private struct DeviceBody: Encodable {
    var environment: HeraldDevice.Environment
    var locale: String
    var timeZone: String
    var tags: [String]?
}

/// `PUT {backend}/activities/{id}/{token}`'s body.
private struct ActivityBody: Encodable {
    var kind: String
    var environment: HeraldDevice.Environment
}
