import Benchmark
import Foundation
import HeraldBundles
import HeraldCore
import HeraldIdentity
import X509
import _CryptoExtras

// Passes signed per second: an RSA 2048 Pass Type ID identity (as Apple issues) and a pass with
// pass.json, two icons and a logo, signed (manifest + CMS) and zipped.

private func certificate(
    subject: DistinguishedName, key: Certificate.PublicKey, issuer: DistinguishedName, issuerKey: Certificate.PrivateKey, authority: Bool
) throws -> Certificate {
    let now = Date()
    return try Certificate(
        version: .v3, serialNumber: .init(), publicKey: key, notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(86400 * 30),
        issuer: issuer, subject: subject, signatureAlgorithm: .sha256WithRSAEncryption,
        extensions: try Certificate.Extensions {
            if authority { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil)) } else { Critical(BasicConstraints.notCertificateAuthority) }
        },
        issuerPrivateKey: issuerKey
    )
}

private func fixture() throws -> (WalletPass, CertificateIdentity, Certificate) {
    let wwdrKey = Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
    let wwdrName = try DistinguishedName { CommonName("Benchmark WWDR") }
    let wwdr = try certificate(subject: wwdrName, key: wwdrKey.publicKey, issuer: wwdrName, issuerKey: wwdrKey, authority: true)
    let leafKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    let subject = try DistinguishedName([
        RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: [0, 9, 2342, 19_200_300, 100, 1, 1], utf8String: "pass.com.example.bench")),
        RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.organizationalUnitName, utf8String: "BENCHTEAM1")),
    ])
    let leaf = try certificate(subject: subject, key: Certificate.PrivateKey(leafKey).publicKey, issuer: wwdrName, issuerKey: wwdrKey, authority: false)
    let identity = try CertificateIdentity(certificatePEM: leaf.serializeAsPEM().pemString, keyPEM: leafKey.pemRepresentation)
    let image = [UInt8](repeating: 0x42, count: 8 << 10)
    let pass = try WalletPass(
        pass: [
            "formatVersion": 1, "passTypeIdentifier": "pass.com.example.bench", "serialNumber": "B-1", "teamIdentifier": "BENCHTEAM1",
            "organizationName": "Bench", "description": "Benchmark", "eventTicket": ["primaryFields": [["key": "seat", "value": "12A"]]],
        ],
        files: [
            try BundleFile(path: "icon.png", contents: image), try BundleFile(path: "icon@2x.png", contents: image),
            try BundleFile(path: "logo.png", contents: image),
        ]
    )
    return (pass, identity, wwdr)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.throughput, .wallClock], maxDuration: .seconds(3), maxIterations: 10_000)

    Benchmark("Pass sign (RSA 2048, SHA-256)") { benchmark in
        let (pass, identity, wwdr) = try fixture()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try pass.sign(identity: identity, wwdr: [wwdr]))
        }
    }

    Benchmark("Pass sign and zip (.pkpass bytes)") { benchmark in
        let (pass, identity, wwdr) = try fixture()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try pass.sign(identity: identity, wwdr: [wwdr]).zipData())
        }
    }
}
