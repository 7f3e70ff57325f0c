import HeraldAPNS
import HeraldCore
import HeraldFCM
import HeraldGateway
import HeraldIdentity
import HeraldStore
import HeraldWebPush
import NIOSSL

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `herald doctor`'s checks of each app's credentials, as the configuration loaded them: a
/// provider key's IDs, a certificate's validity, topics and environment, a VAPID key and an FCM
/// service account. (The loader has already refused a key or certificate that does not parse.)
enum DoctorCredentials {
    /// From this long before a certificate expires, its row is a warning (as the gateway's daily
    /// log warning).
    static let expiryWarning: TimeInterval = 30 * 86400

    /// A row per credential of each app.
    static func check(_ configuration: GatewayConfiguration, now: Date = Date()) -> [DoctorCheck] {
        var rows: [DoctorCheck] = []
        for app in configuration.apps {
            if let credentials = app.credentials, let topic = app.topic {
                rows.append(check(credentials, app: app, topic: topic, kinds: nil, now: now))
                // Which credential serves each environment (credentialsByEnvironment), each
                // environment's own checked too.
                for environment in TokenEnvironment.allCases {
                    let name = "app \(app.id): APNs \(environment.rawValue) devices"
                    guard let serving = app.credentials(for: environment) else {
                        rows.append(
                            .warning(
                                name,
                                "no credential: they fail with APNsEnvironmentNotConfigured; add credentialsByEnvironment.\(environment.rawValue) if the app has any"
                            ))
                        continue
                    }
                    if !same(serving, credentials) { rows.append(check(serving, app: app, topic: topic, kinds: nil, now: now)) }
                    rows.append(.ok(name, "sent with the \(GatewayConfiguration.App.describe(serving)) to \(app.host(for: environment))"))
                }
            }
            // A kind's own credential (a VoIP certificate), each once with the kinds it serves.
            var byKind: [(credentials: APNSCredentials, kinds: [TokenKind])] = []
            for kind in TokenKind.allCases {
                guard let credentials = app.credentialsByKind[kind] else { continue }
                if let index = byKind.firstIndex(where: { same($0.credentials, credentials) }) {
                    byKind[index].kinds.append(kind)
                } else if app.credentials.map({ !same($0, credentials) }) ?? true {
                    byKind.append((credentials, [kind]))
                }
            }
            for (credentials, kinds) in byKind {
                rows.append(check(credentials, app: app, topic: app.topic ?? "", kinds: kinds, now: now))
            }
            if let webPush = app.webPush {
                rows.append(.ok("app \(app.id): Web Push VAPID key", "P-256 key parses; public key \(webPush.key.publicKeyBase64URL.prefix(16))…, subject \(webPush.subject)"))
            }
            if let hms = app.hms {
                // The loader has parsed the key and read the secret from its variable: say which
                // of Push Kit's APIs the app can reach, so a device of the other is not a surprise.
                if let credentials = hms.app {
                    rows.append(.ok("app \(app.id): Huawei Push Kit client \(credentials.clientID)", "its secret is set; Huawei phones (Android API) reachable"))
                } else {
                    rows.append(.warning("app \(app.id): Huawei Push Kit (Android API)", "no clientID: devices registered with hmsAPI android fail with HMSNotConfigured"))
                }
                if let account = hms.serviceAccount {
                    rows.append(.ok("app \(app.id): Huawei service account", "\(account.subAccount) of project \(account.projectID): its RSA private key parses; HarmonyOS NEXT reachable"))
                } else {
                    rows.append(.warning("app \(app.id): Huawei Push Kit (HarmonyOS NEXT)", "no serviceAccountFile: devices registered with hmsAPI harmony fail with HMSNotConfigured"))
                }
            }
            if let fcm = app.fcm {
                let account = fcm.serviceAccount
                rows.append(
                    .ok(
                        "app \(app.id): FCM service account",
                        "\(account.clientEmail) of project \(account.projectID): its RSA private key parses; key ID \(account.privateKeyID.prefix(8))…"
                    )
                )
            }
        }
        return rows
    }

    /// The API's own HTTPS certificate (`tls` in the file), when it has one: its leaf's expiry.
    static func checkAPICertificate(_ configuration: GatewayConfiguration, now: Date = Date()) -> [DoctorCheck] {
        guard let files = configuration.tls?.files else { return [] }
        let name = "API certificate \(files.certificateFile)"
        // The loader read this file a moment ago; read again only for the leaf's dates.
        guard let leaf = try? NIOSSLCertificate.fromPEMFile(files.certificateFile).first else {
            return [.error(name, "cannot be read again: check the file and its permissions")]
        }
        let expiry = Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter))
        let day = expiry.formatted(.iso8601.year().month().day())
        if now > expiry {
            return [.error(name, "expired on \(day): every client refuses it; renew it and send herald serve SIGHUP (it reads the files again)")]
        }
        let left = Int(expiry.timeIntervalSince(now) / 86400)
        if expiry.timeIntervalSince(now) < expiryWarning {
            return [.warning(name, "expires on \(day), in \(left) day\(left == 1 ? "" : "s"): renew it, then send herald serve SIGHUP")]
        }
        return [.ok(name, "valid until \(day) (\(left) days)")]
    }

    private static func same(_ left: APNSCredentials, _ right: APNSCredentials) -> Bool {
        GatewayConfiguration.App.describe(left) == GatewayConfiguration.App.describe(right)
    }

    private static func check(_ credentials: APNSCredentials, app: GatewayConfiguration.App, topic: String, kinds: [TokenKind]?, now: Date) -> DoctorCheck {
        let forKinds = kinds.map { " (for \($0.map(\.rawValue).joined(separator: ", ")))" } ?? ""
        switch credentials {
        case .providerToken(let key):
            let name = "app \(app.id): APNs provider key \(key.keyID)\(forKinds)"
            // Apple's key IDs and team IDs are 10 characters of A-Z 0-9 (the developer account's
            // Keys page and Membership details); anything else is refused with InvalidProviderToken.
            let malformed = [("key ID", key.keyID), ("team ID", key.teamID)].filter { !isAppleID($0.1) }
            if let (field, value) = malformed.first {
                return .warning(
                    name,
                    "the \(field) '\(value)' is not 10 characters of A-Z 0-9 as Apple's are: copy it from the developer account (Keys, Membership) or APNs will refuse every token"
                )
            }
            return .ok(name, "P-256 key parses; key ID \(key.keyID), team \(key.teamID)")
        case .providerTokens:
            return .ok("app \(app.id): APNs provider tokens\(forKinds)", "from an issuer given in code")
        case .certificate(let identity):
            return check(identity, app: app, topic: topic, kinds: kinds, name: "app \(app.id): APNs certificate '\(identity.subjectDescription)'\(forKinds)", now: now)
        }
    }

    private static func check(
        _ identity: CertificateIdentity, app: GatewayConfiguration.App, topic: String, kinds: [TokenKind]?, name: String, now: Date
    ) -> DoctorCheck {
        let day = identity.notValidAfter.formatted(.iso8601.year().month().day())
        if now > identity.notValidAfter {
            return .error(name, "expired on \(day): every send fails; make a new one in Apple's developer account (Certificates), export it as .p12 and point the configuration at it")
        }
        if now < identity.certificate.notValidBefore {
            let from = identity.certificate.notValidBefore.formatted(.iso8601.year().month().day())
            return .error(name, "not valid before \(from): check this machine's clock, or use the certificate in force now")
        }
        // The topics each kind it serves sends to: the bundle ID plus the push type's suffix.
        let topics = (kinds ?? [.alert]).compactMap { PushType(rawValue: $0.rawValue) }.map { $0.topic(forBundleID: topic) }
        let carried = identity.listedTopics.isEmpty ? [identity.subjectUID].compactMap { $0 } : identity.listedTopics
        if let missing = topics.first(where: { !identity.allows(topic: $0) }) {
            return .error(
                name,
                "does not carry the topic \(missing) (it carries \(carried.joined(separator: ", "))): use the app's certificate, or correct apps[].apns.topic"
            )
        }
        let environments = identity.environments
        let sendsTo = app.environment.kind
        if sendsTo == .production, environments.development, !environments.production {
            return .error(name, "a development (sandbox) certificate, but the app sends to production: use the production certificate or set environment to sandbox")
        }
        if sendsTo == .sandbox, environments.production, !environments.development {
            return .error(name, "a production certificate, but the app sends to the sandbox: use the development certificate or set environment to production")
        }
        let left = Int(identity.notValidAfter.timeIntervalSince(now) / 86400)
        if identity.notValidAfter.timeIntervalSince(now) < expiryWarning {
            return .warning(name, "expires on \(day), in \(left) day\(left == 1 ? "" : "s"): renew it in Apple's developer account before then")
        }
        let environmentText = switch (environments.development, environments.production) {
        case (true, true): "sandbox and production"
        case (true, false): "sandbox"
        case (false, true): "production"
        case (false, false): "environment not stated"
        }
        return .ok(name, "valid until \(day) (\(left) days); topics \(carried.joined(separator: ", ")); \(environmentText)")
    }

    /// Ten of A-Z 0-9, as Apple's key IDs and team IDs are.
    static func isAppleID(_ text: String) -> Bool {
        text.utf8.count == 10 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
    }
}
