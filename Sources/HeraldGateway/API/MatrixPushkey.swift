import HeraldCore
import HeraldStore
import HeraldWebPush

/// A Matrix pusher's pushkey as the device it names, in each platform's form as Sygnal takes it
/// (element-hq/sygnal `docs/applications.md`; docs/matrix.md):
///
/// - APNs: the device token as hex, or base64 of its bytes (what Sygnal's APNs pushkin decodes
///   by default, and what Element iOS sends). All hex digits, of even length, is hex; anything
///   else is read as base64 (standard or URL-safe, padded or not).
/// - FCM: the registration token as it is.
/// - Web Push: the subscription's `keys.p256dh`, with `data.endpoint` and `data.auth`.
enum MatrixPushkey {
    /// What a pushkey is.
    enum Reading: Sendable {
        case device(DeviceRegistration)
        /// It can never reach a device: the homeserver is told to drop it (`rejected`).
        case unusable(String)
        /// A push service this app does not send to (its Web Push `allowedHosts`): left alone,
        /// neither sent nor rejected, as Sygnal does with its `allowed_endpoints`.
        case notAllowed
    }

    /// The longest pushkey (the client-server API's `pushkey`: at most 512 bytes).
    static let maximumLength = 512

    static func reading(_ device: MatrixNotification.Device, platform: DevicePlatform, webPush policy: WebPushSubscription.Policy?) -> Reading {
        let pushkey = device.pushkey
        guard !pushkey.isEmpty, pushkey.utf8.count <= maximumLength else { return .unusable("a pushkey is 1 to \(maximumLength) bytes") }
        // Not a switch: a platform added later has no Matrix pushkey form until it is given one here.
        if platform == .apns {
            return registration { () throws -> DeviceRegistration in try DeviceRegistration(token: try apnsToken(pushkey).hex) }
        }
        if platform == .fcm {
            return registration { () throws -> DeviceRegistration in try DeviceRegistration(fcm: FCMAddress(registrationToken: pushkey)) }
        }
        guard platform == .webpush else { return .unusable("Matrix pushers of \(platform) are not served") }
        guard let policy else { return .unusable("the app has no webPush") }
        guard case .string(let endpoint)? = device.data["endpoint"], case .string(let auth)? = device.data["auth"] else {
            return .unusable("a Web Push pusher's data needs endpoint and auth")
        }
        let json: JSONValue = ["endpoint": .string(endpoint), "keys": ["p256dh": .string(urlSafe(pushkey)), "auth": .string(urlSafe(auth))]]
        let subscription: WebPushSubscription
        switch Result(catching: { () throws(WebPushError) -> WebPushSubscription in try WebPushSubscription(json: json, policy: policy) }) {
        case .success(let made): subscription = made
        case .failure(let error) where error.code == .endpointNotAllowed: return .notAllowed
        case .failure(let error): return .unusable(error.message)
        }
        return registration { () throws -> DeviceRegistration in
            let address = try WebPushAddress(
                endpoint: subscription.endpoint.absoluteString, p256dh: Base64URL.encode(subscription.p256dh), auth: Base64URL.encode(subscription.authSecret))
            return try DeviceRegistration(webPush: address)
        }
    }

    /// The registration `make` makes, or why the pushkey cannot be one.
    private static func registration(_ make: () throws -> DeviceRegistration) -> Reading {
        do {
            return .device(try make())
        } catch {
            return .unusable("\(error)")
        }
    }

    /// An APNs token from hex, or from base64 of its bytes.
    static func apnsToken(_ pushkey: String) throws -> DeviceToken {
        if pushkey.utf8.count % 2 == 0, DeviceToken.isHexDigits(pushkey) { return try DeviceToken(pushkey) }
        guard let bytes = Base64URL.decode(urlSafe(pushkey)), !bytes.isEmpty else {
            throw APNSError(local: .badDeviceToken, "an APNs pushkey is the token in hex or base64")
        }
        return try DeviceToken(bytes: bytes)
    }

    /// Standard base64 as base64url (what the parsers here read), padding dropped.
    static func urlSafe(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.compactMap { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 == "=" ? nil : $0 }))
    }
}
