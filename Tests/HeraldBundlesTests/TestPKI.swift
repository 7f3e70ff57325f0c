import Crypto
import Foundation
import HeraldIdentity
import HeraldTestSupport
import SwiftASN1
import Testing
import X509
import _CryptoExtras

/// A root, a WWDR-like intermediate and leaf certificates shaped like Apple's Pass Type ID and
/// Website Push ID certificates, all RSA 2048 as Apple issues them, made fresh for each test.
struct TestPKI {
    let root: Certificate
    let rootKey: Certificate.PrivateKey
    let wwdr: Certificate
    let wwdrKey: Certificate.PrivateKey

    static let teamID = "HERALDTEAM"

    init() throws {
        let rootKey = Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        let rootName = try DistinguishedName { CommonName("Herald Test Root CA"); OrganizationName("Herald Tests") }
        root = try Self.certificate(subject: rootName, key: rootKey.publicKey, issuer: rootName, issuerKey: rootKey, authority: true)
        let wwdrKey = Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        let wwdrName = try DistinguishedName {
            CommonName("Herald Test Worldwide Developer Relations Certification Authority")
            OrganizationalUnitName("G4")
            OrganizationName("Herald Tests")
        }
        wwdr = try Self.certificate(subject: wwdrName, key: wwdrKey.publicKey, issuer: rootName, issuerKey: rootKey, authority: true)
        self.rootKey = rootKey
        self.wwdrKey = wwdrKey
    }

    /// A signing identity with `uid` in its subject (e.g. `pass.com.example.herald`).
    func leaf(uid: String, team: String = TestPKI.teamID, validFor: TimeInterval = 365 * 86400, issuer: Certificate? = nil, issuerKey: Certificate.PrivateKey? = nil) throws -> CertificateIdentity {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let subject = try DistinguishedName([
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: [0, 9, 2342, 19_200_300, 100, 1, 1], utf8String: uid)),
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.commonName, utf8String: "Pass Type ID: \(uid)")),
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.organizationalUnitName, utf8String: team)),
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.countryName, printableString: "US")),
        ])
        let certificate = try Self.certificate(
            subject: subject, key: Certificate.PrivateKey(key).publicKey, issuer: (issuer ?? wwdr).subject, issuerKey: issuerKey ?? wwdrKey,
            authority: false, validFor: validFor
        )
        return try CertificateIdentity(certificatePEM: certificate.serializeAsPEM().pemString, keyPEM: key.pemRepresentation)
    }

    static func certificate(
        subject: DistinguishedName, key: Certificate.PublicKey, issuer: DistinguishedName, issuerKey: Certificate.PrivateKey,
        authority: Bool, validFor: TimeInterval = 365 * 86400
    ) throws -> Certificate {
        let now = Date()
        let extensions = try Certificate.Extensions {
            if authority {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            } else {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
            }
        }
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(validFor),
            issuer: issuer, subject: subject, signatureAlgorithm: .sha256WithRSAEncryption, extensions: extensions,
            issuerPrivateKey: issuerKey
        )
    }
}

extension ScratchDirectory {
    func writePEM(_ certificate: Certificate, _ name: String) throws -> String {
        try write(name, certificate.serializeAsPEM().pemString)
    }

    /// A `.p12` of `identity`, made by openssl: legacy RC2-40/3DES or OpenSSL 3's AES-256.
    func p12(_ identity: CertificateIdentity, legacy: Bool, password: String, name: String) async throws -> String {
        try await p12(
            certificatePEM: identity.certificate.serializeAsPEM().pemString, keyPEM: identity.privateKey.serializeAsPEM().pemString,
            legacy: legacy, password: password, name: name
        )
    }
}

/// A real PNG of the given size (RGBA, stored deflate blocks), for iconsets and pass images.
func png(width: Int, height: Int) -> [UInt8] {
    func be32(_ value: Int) -> [UInt8] { [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
    func crc(_ bytes: [UInt8]) -> [UInt8] {
        var c: UInt32 = 0xFFFF_FFFF
        for byte in bytes { c = crcTable[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
        return be32(Int(c ^ 0xFFFF_FFFF))
    }
    func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return be32(data.count) + body + crc(body)
    }
    var raw: [UInt8] = []
    for y in 0..<height {
        raw.append(0)  // filter: none
        for x in 0..<width { raw += [UInt8(x * 255 / max(width, 1)), UInt8(y * 255 / max(height, 1)), 128, 255] }
    }
    var zlib: [UInt8] = [0x78, 0x01]
    var offset = 0
    repeat {
        let count = min(65_535, raw.count - offset)
        let last: UInt8 = offset + count == raw.count ? 1 : 0
        zlib += [last, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
        zlib += raw[offset..<offset + count]
        offset += count
    } while offset < raw.count
    var a: UInt32 = 1
    var b: UInt32 = 0
    for byte in raw {
        a = (a + UInt32(byte)) % 65_521
        b = (b + a) % 65_521
    }
    zlib += be32(Int(b << 16 | a))
    let header = be32(width) + be32(height) + [8, 6, 0, 0, 0]
    return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", zlib) + chunk("IEND", [])
}
