import HeraldCore
import NIOHPACK

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The request headers the mock looks at, read in one pass.
struct MockRequestHead {
    var method: String?
    var path: String?
    var authorization: String?
    var topic: String?
    var pushType: String?
    var priority: String?
    var expiration: String?
    var apnsID: String?
    var collapseID: String?
    var channelID: String?
    var requestID: String?
    /// An `apns-*` or `authorization` header that appeared twice.
    var duplicate: String?
    /// Bytes this head holds, for the mock's request budget.
    var size = 256

    init(_ headers: HPACKHeaders) {
        var duplicate: String?
        var size = 256
        func set(_ field: inout String?, _ value: String, _ name: String) {
            if field != nil { duplicate = name }
            field = value
            size += value.utf8.count
        }
        for (name, value, _) in headers {
            switch name {
            case ":method": set(&method, value, name)
            case ":path": set(&path, value, name)
            case "authorization": set(&authorization, value, name)
            case "apns-topic": set(&topic, value, name)
            case "apns-push-type": set(&pushType, value, name)
            case "apns-priority": set(&priority, value, name)
            case "apns-expiration": set(&expiration, value, name)
            case "apns-id": set(&apnsID, value, name)
            case "apns-collapse-id": set(&collapseID, value, name)
            case "apns-channel-id": set(&channelID, value, name)
            case "apns-request-id": set(&requestID, value, name)
            default: break
            }
        }
        self.duplicate = duplicate
        self.size = size
    }

    /// The device token in `/3/device/<token>`, lower-cased, or `nil` when the path is another one.
    var token: Substring? {
        guard let path, path.hasPrefix("/3/device/") else { return nil }
        return path.dropFirst("/3/device/".count)
    }

    /// What the path asks for (apns-spec §1.4, §1.9).
    enum Route: Equatable {
        case device
        case broadcast(bundleID: String)
        case channels(bundleID: String)
        case allChannels(bundleID: String)
        case unknown
    }

    var route: Route {
        guard let path else { return .unknown }
        if path.hasPrefix("/3/device/") { return .device }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        // ["", "4", "broadcasts", "apps", bundle] and ["", "1", "apps", bundle, "channels" | "all-channels"]
        if parts.count == 5, parts[1] == "4", parts[2] == "broadcasts", parts[3] == "apps", !parts[4].isEmpty {
            return .broadcast(bundleID: String(parts[4]))
        }
        if parts.count == 5, parts[1] == "1", parts[2] == "apps", !parts[3].isEmpty {
            if parts[4] == "channels" { return .channels(bundleID: String(parts[3])) }
            if parts[4] == "all-channels" { return .allChannels(bundleID: String(parts[3])) }
        }
        return .unknown
    }
}

/// How a connection authenticated: a client certificate's topics, or the provider token last seen.
struct MockConnectionAuth {
    /// With mutual TLS: the certificate's subject UID and listed topics.
    var certificate: (uid: String?, topics: [String])?
    var currentToken: String?
    var currentTokenIssuedAt: Int?
    /// The `kid` of the provider token in use on this connection.
    var currentKeyID: String?
    /// Set when the request brought a token new to this connection.
    var tokenChanged = false
}

/// A request the mock will accept.
struct MockAcceptance {
    var token: String
    var apnsID: String
    var topic: String
    var pushType: PushType
    var priority: Int
}

/// The checks APNs makes on a request, in order, with the status and reason it answers
/// (apns-spec §1.4-§1.8). Pure: no I/O, no clock of its own.
struct MockRequestValidator: Sendable {
    var verifier: MockTokenVerifier
    /// Scoped keys' environment and topics, by key ID.
    var scopes: [String: MockAPNSServer.ProviderKeyScope] = [:]
    /// The mock answers as the development environment.
    var sandbox = false
    /// Whether provider tokens are checked against registered keys; with no keys registered any
    /// well-formed ES256 token is taken.
    var checksSignatures: Bool { !verifier.keys.isEmpty }

    func validate(
        _ head: MockRequestHead, body: Int, auth: inout MockConnectionAuth, unregistered: [String: Date], now: Date, ids: inout MockIdentifiers
    ) -> Result<MockAcceptance, MockRejection> {
        guard head.method == "POST" else { return .failure(.reason(.methodNotAllowed)) }
        guard let rawToken = head.token else { return .failure(.reason(.badPath)) }
        guard !rawToken.isEmpty else { return .failure(.reason(.missingDeviceToken)) }
        guard let token = try? DeviceToken(String(rawToken)) else { return .failure(.reason(.badDeviceToken)) }
        if head.duplicate != nil { return .failure(.reason(.duplicateHeaders)) }

        // Authentication: a client certificate, else a provider token.
        var topic = head.topic
        if let rejection = authenticate(head, auth: &auth, now: now) { return .failure(rejection) }
        if let certificate = auth.certificate {
            if topic == nil {
                guard certificate.topics.isEmpty, let uid = certificate.uid else { return .failure(.reason(.missingTopic)) }
                topic = uid
            }
            let allowed = certificate.topics.isEmpty
                ? certificate.uid.map { topic == $0 || topic!.hasPrefix($0 + ".") } ?? false
                : certificate.topics.contains(topic!) || topic == certificate.uid
            if !allowed { return .failure(.reason(.badTopic)) }
        } else if topic == nil {
            return .failure(.reason(.missingTopic))
        }
        let finalTopic = topic!
        // A scoped key outside its environment or topics (apns-spec §2, "Key scoping").
        if let keyID = auth.currentKeyID, let scope = scopes[keyID], let refusal = scope.refusal(topic: finalTopic, sandbox: sandbox) {
            return .failure(.reason(refusal))
        }

        let pushType: PushType
        if let text = head.pushType {
            guard let parsed = PushType(rawValue: text) else { return .failure(.reason(.invalidPushType)) }
            pushType = parsed
        } else {
            pushType = .alert
        }
        if (try? pushType.validate(topic: finalTopic)) == nil { return .failure(.reason(.badTopic)) }

        var priority = PushPriority.default(for: pushType)
        if let text = head.priority {
            guard let parsed = try? PushPriority(header: text) else { return .failure(.reason(.badPriority)) }
            priority = parsed
        }
        if pushType == .background && priority != .throttled { return .failure(.reason(.badPriority)) }
        if let text = head.expiration {
            guard let seconds = Int(text), seconds >= 0 else { return .failure(.reason(.badExpirationDate)) }
        }
        var apnsID = ""
        if let text = head.apnsID {
            guard let uuid = try? PushHeaders.apnsID(text) else { return .failure(.reason(.badMessageId)) }
            apnsID = MockIdentifiers.format(uuid)
        }
        if let collapseID = head.collapseID, collapseID.utf8.isEmpty || collapseID.utf8.count > PushHeaders.maximumCollapseIDSize {
            return .failure(.reason(.badCollapseId))
        }
        if body == 0 { return .failure(.reason(.payloadEmpty)) }
        if body > pushType.maximumPayloadSize { return .failure(.reason(.payloadTooLarge)) }
        if let since = unregistered[token.hex] {
            return .failure(MockRejection(.unregistered, timestamp: since))
        }
        if apnsID.isEmpty { apnsID = ids.next() }
        return .success(MockAcceptance(token: token.hex, apnsID: apnsID, topic: finalTopic, pushType: pushType, priority: priority.rawValue))
    }

    /// A client certificate (checked in the TLS handshake), else a provider token: present,
    /// valid, not expired, not changed on this connection within 20 minutes (apns-spec §2).
    func authenticate(_ head: MockRequestHead, auth: inout MockConnectionAuth, now: Date) -> MockRejection? {
        if auth.certificate != nil { return nil }
        guard let authorization = head.authorization else { return .reason(.missingProviderToken) }
        guard authorization.hasPrefix("bearer ") else { return .reason(.invalidProviderToken) }
        let jwt = authorization.dropFirst("bearer ".count)
        if auth.currentToken.map({ $0[...] == jwt }) != true {
            let issuedAt: Int
            var keyID: String?
            if checksSignatures {
                switch verifier.verify(jwt, now: now) {
                case .failure(let rejection): return rejection
                case .success(let verified):
                    issuedAt = verified.issuedAt
                    keyID = verified.keyID
                }
            } else {
                guard let claims = jwt.split(separator: ".").dropFirst().first.flatMap({ Base64URL.decode($0) }),
                    case .int(let iat) = (try? JSONValue(parsing: claims))?["iat"] ?? .null
                else { return .invalidProviderToken("not a JWT") }
                issuedAt = iat
            }
            if let previous = auth.currentTokenIssuedAt {
                // The client's iat is any integer: a gap too large for Int is more than 20 minutes.
                let (gap, overflow) = issuedAt.subtractingReportingOverflow(previous)
                if issuedAt < previous || (!overflow && gap < 20 * 60) { return .reason(.tooManyProviderTokenUpdates) }
            }
            auth.currentToken = String(jwt)
            auth.currentTokenIssuedAt = issuedAt
            auth.currentKeyID = keyID
            auth.tokenChanged = true
        } else if let issuedAt = auth.currentTokenIssuedAt, Double(issuedAt) < now.timeIntervalSince1970 - 3600 {
            return .reason(.expiredProviderToken)
        }
        return nil
    }

    /// A broadcast to a channel (apns-spec §1.9): the channel must exist for the app, the push
    /// type is liveactivity, priority 10 or 5, expiration 0 on a no-storage channel, at most 5120 bytes.
    func validateBroadcast(
        _ head: MockRequestHead, bundleID: String, body: Int, auth: inout MockConnectionAuth, channels: MockChannelStore, now: Date,
        ids: inout MockIdentifiers
    ) -> Result<String, MockRejection> {
        guard head.method == "POST" else { return .failure(.reason(.methodNotAllowed)) }
        if head.duplicate != nil { return .failure(.reason(.duplicateHeaders)) }
        if let rejection = authenticate(head, auth: &auth, now: now) { return .failure(rejection) }
        guard let channelID = head.channelID, !channelID.isEmpty else { return .failure(.reason(.missingChannelId)) }
        // Channel IDs are base64 (§1.9).
        guard Base64URL.decode(String(channelID.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })) != nil else {
            return .failure(.reason(.badChannelId))
        }
        guard let policy = channels.policy(of: channelID, bundleID: bundleID) else { return .failure(.reason(.channelNotRegistered)) }
        guard let pushType = head.pushType else { return .failure(.reason(.missingPushType)) }
        guard pushType.lowercased() == "liveactivity" else { return .failure(.reason(.invalidPushType)) }
        if let priority = head.priority, priority != "10" && priority != "5" { return .failure(.reason(.badPriority)) }
        if let expiration = head.expiration {
            guard let seconds = Int(expiration), seconds >= 0 else { return .failure(.reason(.badExpirationDate)) }
            if policy == .noStorage && seconds != 0 { return .failure(.reason(.badExpirationDate)) }
        } else if policy == .noStorage {
            return .failure(.reason(.badExpirationDate))
        }
        let requestID: String
        if let given = head.requestID {
            guard let uuid = try? PushHeaders.apnsID(given) else { return .failure(.reason(.badMessageId)) }
            requestID = MockIdentifiers.format(uuid)
        } else {
            requestID = ids.next()
        }
        if body == 0 { return .failure(.reason(.payloadEmpty)) }
        if body > BroadcastNotification.maximumPayloadSize { return .failure(.reason(.payloadTooLarge)) }
        return .success(requestID)
    }
}
