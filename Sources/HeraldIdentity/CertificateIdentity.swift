import Crypto
import NIOSSL
import SwiftASN1
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A certificate with its private key, from a `.p12` or PEM files: the client certificate for APNs
/// certificate authentication, and the signer of Wallet passes and Safari push packages.
///
/// One loader serves both, so a file that works for one works for the other. Printing an identity
/// shows its subject and validity, never the key.
public struct CertificateIdentity: Sendable {
    /// The leaf certificate.
    public let certificate: Certificate
    /// Any further certificates that came with it (the issuing chain in a `.p12`).
    public let additionalCertificates: [Certificate]
    /// The private key, for signing.
    public let privateKey: Certificate.PrivateKey
    /// The leaf and chain in NIOSSL's form, for TLS client authentication.
    public let tlsCertificateChain: [NIOSSLCertificate]
    /// The key in NIOSSL's form, for TLS client authentication.
    public let tlsPrivateKey: NIOSSLPrivateKey

    init(certificates: [NIOSSLCertificate], key: NIOSSLPrivateKey, source: String) throws(IdentityError) {
        guard let leafTLS = certificates.first else {
            throw IdentityError(.noCertificate, "\(source) holds no certificate")
        }
        let parsed: [Certificate]
        do {
            parsed = try certificates.map { try Certificate(derEncoded: $0.toDERBytes()) }
        } catch {
            throw IdentityError(.malformed, "\(source): the certificate could not be parsed (\(error))")
        }
        let privateKey = try Self.convert(key, source: source)
        // A .p12 may list the chain before the leaf: the leaf is the certificate that matches the key.
        guard let leafIndex = parsed.firstIndex(where: { $0.publicKey == privateKey.publicKey }) else {
            throw IdentityError(
                .keyMismatch,
                "\(source): the private key does not belong to the certificate '\(parsed[0].subject)'; use the key that was exported with it"
            )
        }
        _ = leafTLS
        var tlsChain = certificates
        var others = parsed
        let leaf = others.remove(at: leafIndex)
        tlsChain.insert(tlsChain.remove(at: leafIndex), at: 0)
        self.certificate = leaf
        self.additionalCertificates = others
        self.privateKey = privateKey
        self.tlsCertificateChain = tlsChain
        self.tlsPrivateKey = key
    }

    /// NIOSSL exports keys as DER in whichever form BoringSSL keeps them: PKCS#8, PKCS#1 (RSA) or SEC1 (EC).
    private static func convert(_ key: NIOSSLPrivateKey, source: String) throws(IdentityError) -> Certificate.PrivateKey {
        let der: [UInt8]
        do {
            der = try key.derBytes
        } catch {
            throw IdentityError(.malformed, "\(source): the private key could not be read (\(error))")
        }
        for discriminator in ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"] {
            if let converted = try? Certificate.PrivateKey(pemDocument: PEMDocument(type: discriminator, derBytes: der)) {
                return converted
            }
        }
        throw IdentityError(.malformed, "\(source): the private key is of a kind Herald cannot use (RSA or EC P-256/384/521 are supported)")
    }

    /// The subject's UID attribute (OID 0.9.2342.19200300.100.1.1): the topic of an APNs certificate,
    /// the pass type ID of a pass certificate, the website push ID of a web certificate (apns-spec §7.2).
    public var subjectUID: String? { certificate.apnsSubjectUID }

    /// The subject's common name.
    public var commonName: String? {
        for rdn in certificate.subject {
            for attribute in rdn where attribute.type == ASN1ObjectIdentifier.RDNAttributeType.commonName {
                return String(attribute.value)
            }
        }
        return nil
    }

    /// The subject's organisational unit, which Apple sets to the Team ID.
    public var organizationalUnit: String? {
        for rdn in certificate.subject {
            for attribute in rdn where attribute.type == ASN1ObjectIdentifier.RDNAttributeType.organizationalUnitName {
                return String(attribute.value)
            }
        }
        return nil
    }

    /// When the certificate stops being valid.
    public var notValidAfter: Date { certificate.notValidAfter }

    /// Refuses an identity that is expired or not yet valid; returns a warning when it expires
    /// within `warningWindow` (30 days by default).
    public func checkValidity(at now: Date = Date(), warningWindow: TimeInterval = 30 * 86400) throws(IdentityError) -> String? {
        if now > certificate.notValidAfter {
            throw IdentityError(.expired, "certificate '\(subjectDescription)' expired on \(Self.day(certificate.notValidAfter)); renew it in Apple's developer account")
        }
        if now < certificate.notValidBefore {
            throw IdentityError(.notYetValid, "certificate '\(subjectDescription)' is not valid before \(Self.day(certificate.notValidBefore))")
        }
        if certificate.notValidAfter.timeIntervalSince(now) < warningWindow {
            return "certificate '\(subjectDescription)' expires on \(Self.day(certificate.notValidAfter)), in less than \(Int(warningWindow / 86400)) days"
        }
        return nil
    }

    /// The UID if there is one, else the common name, else the whole subject.
    public var subjectDescription: String {
        subjectUID ?? commonName ?? "\(certificate.subject)"
    }

    static let uidOID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]

    static func day(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day())
    }
}

extension CertificateIdentity: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "CertificateIdentity(\(subjectDescription), valid until \(Self.day(notValidAfter)))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["subject": subjectDescription, "notValidAfter": notValidAfter]) }
}
