import SwiftASN1
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a CMS signature carries, read for reporting: its certificates, digest and signing time
/// (RFC 5652 §5). Verification itself is swift-certificates' (``BundleSigner``).
struct SignatureContents {
    var certificates: [Certificate] = []
    var digestAlgorithm: ASN1ObjectIdentifier?
    var signingTime: Date?
    var isDetached = true

    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let signingTimeOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 5]
    static let sha1OID: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
    static let sha256OID: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]

    /// Reads `signature`; `nil` when it is not CMS SignedData.
    init?(_ signature: [UInt8]) {
        guard let root = try? BER.parse(signature), let contentInfo = Self.children(root), contentInfo.count >= 2,
            let type = try? ASN1ObjectIdentifier(berEncoded: contentInfo[0]), type == Self.signedDataOID,
            let explicit = Self.children(contentInfo[1]), let signedDataNode = explicit.first,
            let signedData = Self.children(signedDataNode), signedData.count >= 4
        else { return nil }
        // encapContentInfo: SEQUENCE { eContentType, [0] eContent OPTIONAL }: detached when absent.
        isDetached = (Self.children(signedData[2])?.count ?? 1) == 1
        for node in signedData[3...] {
            if node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific), let items = Self.children(node) {
                certificates = items.compactMap { try? Certificate(derEncoded: Array($0.encodedBytes)) }
            } else if node.identifier == .set, let signers = Self.children(node), let first = signers.first, let signer = Self.children(first) {
                readSigner(signer)
            }
        }
    }

    private mutating func readSigner(_ fields: [ASN1Node]) {
        guard fields.count >= 3 else { return }
        digestAlgorithm = Self.children(fields[2])?.first.flatMap { try? ASN1ObjectIdentifier(berEncoded: $0) }
        for field in fields[3...] where field.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            for attribute in Self.children(field) ?? [] {
                guard let parts = Self.children(attribute), parts.count == 2,
                    (try? ASN1ObjectIdentifier(berEncoded: parts[0])) == Self.signingTimeOID,
                    let value = Self.children(parts[1])?.first
                else { continue }
                if let utc = try? UTCTime(berEncoded: value) {
                    signingTime = Self.date(year: utc.year, month: utc.month, day: utc.day, hours: utc.hours, minutes: utc.minutes, seconds: utc.seconds)
                } else if let generalized = try? GeneralizedTime(berEncoded: value) {
                    signingTime = Self.date(
                        year: generalized.year, month: generalized.month, day: generalized.day, hours: generalized.hours,
                        minutes: generalized.minutes, seconds: generalized.seconds
                    )
                }
            }
        }
    }

    private static func children(_ node: ASN1Node) -> [ASN1Node]? {
        guard case .constructed(let nodes) = node.content else { return nil }
        return Array(nodes)
    }

    private static func date(year: Int, month: Int, day: Int, hours: Int, minutes: Int, seconds: Int) -> Date? {
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (hours, minutes, seconds)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: components)
    }
}
