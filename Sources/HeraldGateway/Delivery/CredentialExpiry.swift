import HeraldAPNS
import HeraldStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// When each app's APNs certificate stops working (a provider key does not expire): a gauge
/// `herald_credential_expiry_timestamp_seconds{app,credential}` from the start, and a warning
/// logged each day within ``warningWindow`` of it, so it is renewed before sends fail.
struct CredentialExpiry: Sendable, Hashable {
    var app: String
    /// Which credential: `certificate` (the app's), `certificate:ENVIRONMENT` (an environment's own) or
    /// `certificate:KIND` (a kind's own).
    var credential: String
    var expiry: Date

    /// How long before expiry the daily warning starts.
    static let warningWindow: TimeInterval = 30 * 86400
    /// How often the warning is repeated.
    static let warningInterval: Duration = .seconds(86400)

    /// The expiring credentials of `apps`.
    static func of(_ apps: [GatewayConfiguration.App]) -> [CredentialExpiry] {
        apps.flatMap { app -> [CredentialExpiry] in
            let credentials: [(String, APNSCredentials)] =
                [app.credentialsServeEveryEnvironment ? app.credentials.map { ("certificate", $0) } : nil].compactMap(\.self)
                + TokenEnvironment.allCases.compactMap { environment in
                    app.credentialsByEnvironment[environment].map { ("certificate:\(environment.rawValue)", $0) }
                }
                + TokenKind.allCases.compactMap { kind in app.credentialsByKind[kind].map { ("certificate:\(kind.rawValue)", $0) } }
            return credentials.compactMap { label, credentials -> CredentialExpiry? in
                guard case .certificate(let identity) = credentials else { return nil }
                return CredentialExpiry(app: app.id, credential: label, expiry: identity.notValidAfter)
            }
        }
    }

    /// The warning due at `now`, if it expires within ``warningWindow`` (or has expired).
    func warning(now: Date) -> String? {
        let left = expiry.timeIntervalSince(now)
        guard left <= Self.warningWindow else { return nil }
        let day = expiry.formatted(.iso8601.year().month().day())
        if left <= 0 { return "the APNs \(credential) of app \(app) expired on \(day): sends fail until it is renewed" }
        let days = Int((left / 86400).rounded(.up))
        return "the APNs \(credential) of app \(app) expires on \(day), in \(days) day\(days == 1 ? "" : "s"): renew it in Apple's developer account"
    }
}
