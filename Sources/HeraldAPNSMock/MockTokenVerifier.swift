import Crypto
import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Checks provider tokens as APNs does (apns-spec §2): ES256 only, a registered `kid`, the right
/// `iss`, a valid signature, and an `iat` under an hour old.
struct MockTokenVerifier: Sendable {
    struct Verified: Equatable {
        var keyID: String
        var teamID: String
        var issuedAt: Int
    }

    /// Registered keys by key ID, with the team each belongs to (`nil`: any team).
    var keys: [String: (publicKey: P256.Signing.PublicKey, teamID: String?)]

    func verify(_ jwt: Substring, now: Date) -> Result<Verified, MockRejection> {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]), let claimsBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = try? JSONValue(parsing: headerBytes), let claims = try? JSONValue(parsing: claimsBytes)
        else {
            return .failure(.invalidProviderToken("the token is not a JWT"))
        }
        guard header["alg"]?.stringValue == "ES256" else {
            return .failure(.invalidProviderToken("alg must be ES256"))
        }
        guard let keyID = header["kid"]?.stringValue, let registered = keys[keyID] else {
            return .failure(.invalidProviderToken("kid is not a registered key"))
        }
        guard let teamID = claims["iss"]?.stringValue, registered.teamID == nil || registered.teamID == teamID else {
            return .failure(.invalidProviderToken("iss is not the key's team"))
        }
        guard case .int(let issuedAt) = claims["iat"] ?? .null else {
            return .failure(.invalidProviderToken("iat must be an integer"))
        }
        // APNs takes the raw R||S form, and DER too (apns-spec §2).
        let ecdsa = (try? P256.Signing.ECDSASignature(rawRepresentation: signature))
            ?? (try? P256.Signing.ECDSASignature(derRepresentation: signature))
        let signingInput = Array(jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard let ecdsa, registered.publicKey.isValidSignature(ecdsa, for: signingInput) else {
            return .failure(.invalidProviderToken("the signature does not verify"))
        }
        if Double(issuedAt) < now.timeIntervalSince1970 - 3600 {
            return .failure(MockRejection(.expiredProviderToken))
        }
        return .success(Verified(keyID: keyID, teamID: teamID, issuedAt: issuedAt))
    }
}

/// An APNs error answer.
struct MockRejection: Error, Equatable {
    var status: Int
    var reason: String
    var timestamp: Date?

    /// The answer APNs gives for `reason`, with the status from ``APNSReason/status``: the one table
    /// the client reads too, so client and mock cannot disagree about a status.
    init(_ reason: APNSReason, timestamp: Date? = nil) {
        self.init(status: reason.status ?? 400, reason: reason.rawValue, timestamp: timestamp)
    }

    /// A scripted answer, as given (``MockFault/reject(status:reason:timestamp:)``).
    init(status: Int, reason: String, timestamp: Date? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
    }

    /// `InvalidProviderToken`; `why` is for the reader of the code only, as APNs says no more.
    static func invalidProviderToken(_ why: String) -> MockRejection {
        MockRejection(.invalidProviderToken)
    }

    static func reason(_ reason: APNSReason) -> MockRejection {
        MockRejection(reason)
    }
}
