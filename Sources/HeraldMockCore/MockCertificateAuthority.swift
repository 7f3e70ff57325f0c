import Crypto
import HeraldIdentity
import NIOSSL
import SwiftASN1
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A throwaway certificate authority for tests and the mock: it issues the mock's TLS certificate
/// (for 127.0.0.1, ::1 and localhost) and client certificates shaped like Apple's push
/// certificates (subject UID, topic list, environment extensions). Clients trust it with ``certificatePEM``.
public struct MockCertificateAuthority: Sendable {
    /// The CA certificate, for clients to trust.
    public let certificate: Certificate
    private let key: Certificate.PrivateKey

    /// A new CA with a fresh P-256 key, valid for a year.
    public init(name: String = "Herald Mock APNs CA") throws {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let subject = try DistinguishedName { CommonName(name) }
        let now = Date()
        certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(365 * 86400),
            issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: key
        )
        self.key = key
    }

    /// The CA certificate as PEM, e.g. for `--ca-file`.
    public var certificatePEM: String {
        (try? certificate.serializeAsPEM().pemString) ?? ""
    }

    /// The CA certificate for NIOSSL trust roots.
    public var tlsCertificate: NIOSSLCertificate {
        get throws { try NIOSSLCertificate(bytes: Self.der(certificate), format: .der) }
    }

    /// A server certificate for local addresses, signed by this CA.
    public func issueServerIdentity(hosts: [String] = ["127.0.0.1", "::1", "localhost"]) throws -> CertificateIdentity {
        var names: [GeneralName] = []
        for host in hosts {
            if let v4 = Self.IPv4(host) {
                names.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(v4))))
            } else if host == "::1" {
                names.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice([UInt8](repeating: 0, count: 15) + [1]))))
            } else {
                names.append(.dnsName(host))
            }
        }
        return try issue(subject: DistinguishedName { CommonName(hosts.first ?? "localhost") }) {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true, keyEncipherment: true))
            try ExtendedKeyUsage([.serverAuth])
            SubjectAlternativeNames(names)
        }
    }

    /// A client certificate shaped like an APNs push certificate (apns-spec §7.2): subject
    /// `UID=<topic>, CN=Apple Push Services: <topic>, OU=<team>`, the topic list extension when
    /// `topics` is given, and the development/production environment extensions.
    public func issuePushCertificate(
        topic: String, topics: [String] = [], teamID: String = "HERALDTEAM", validFor: TimeInterval = 365 * 86400
    ) throws -> CertificateIdentity {
        let subject = try DistinguishedName([
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: [0, 9, 2342, 19_200_300, 100, 1, 1], utf8String: topic)),
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.commonName, utf8String: "Apple Push Services: \(topic)")),
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.organizationalUnitName, utf8String: teamID)),
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.countryName, printableString: "US")),
        ])
        var extra: [Certificate.Extension] = [
            Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 3, 1], critical: false, value: [0x05, 0x00]),
            Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 3, 2], critical: false, value: [0x05, 0x00]),
        ]
        if !topics.isEmpty {
            extra.append(Certificate.Extension(oid: CertificateIdentity.topicsOID, critical: false, value: ArraySlice(try Self.topicList(topics))))
        }
        return try issue(subject: subject, validFor: validFor, additional: extra) {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.clientAuth])
        }
    }

    private func issue(
        subject: DistinguishedName, validFor: TimeInterval = 365 * 86400, additional: [Certificate.Extension] = [],
        @ExtensionsBuilder extensions: () throws -> Result<Certificate.Extensions, any Error>
    ) throws -> CertificateIdentity {
        let leafKey = P256.Signing.PrivateKey()
        var allExtensions = try Certificate.Extensions(builder: extensions)
        for ext in additional { try allExtensions.append(ext) }
        let now = Date()
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(validFor),
            issuer: certificate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: allExtensions, issuerPrivateKey: key
        )
        return try CertificateIdentity(
            certificatePEM: try leaf.serializeAsPEM().pemString, keyPEM: leafKey.pemRepresentation, source: "a mock certificate"
        )
    }

    /// `SEQUENCE { UTF8String topic, SEQUENCE { UTF8String "app" }, … }`, as in PUSHY's fixture (§7.2).
    static func topicList(_ topics: [String]) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { coder in
            for topic in topics {
                try coder.serialize(ASN1UTF8String(topic))
                try coder.appendConstructedNode(identifier: .sequence) { inner in
                    try inner.serialize(ASN1UTF8String(topic.hasSuffix(".voip") ? "voip" : "app"))
                }
            }
        }
        return serializer.serializedBytes
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    private static func IPv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".")
        guard parts.count == 4 else { return nil }
        let bytes = parts.compactMap { UInt8($0) }
        return bytes.count == 4 ? bytes : nil
    }
}
