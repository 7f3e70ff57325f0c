import Crypto
import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// Decodes base64url without padding, as a verifier would.
func base64URLDecode(_ text: Substring) throws -> Data {
    #expect(!text.contains("="), "base64url must not be padded")
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return try #require(Data(base64Encoded: base64))
}

@Suite("Provider tokens (JWT)")
struct ProviderTokenTests {
    @Test("an ES256 JWT that verifies against the public key, with header and claims as §2 says")
    func verifies() throws {
        let privateKey = P256.Signing.PrivateKey()
        let key = try ProviderKey(pem: privateKey.pemRepresentation, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let issued = Date(timeIntervalSince1970: 1_700_000_000.9)
        let token = try ProviderToken(key: key, issuedAt: issued)

        let parts = token.jwt.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let header = try JSONSerialization.jsonObject(with: base64URLDecode(parts[0])) as! [String: Any]
        let claims = try JSONSerialization.jsonObject(with: base64URLDecode(parts[1])) as! [String: Any]
        #expect(header.count == 2)
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "ABC123DEFG")
        #expect(claims.count == 2)
        #expect(claims["iss"] as? String == "DEF123GHIJ")
        // iat is an integer number of seconds, not 1700000000.9.
        #expect(String(decoding: try base64URLDecode(parts[1]), as: UTF8.self).contains(#""iat":1700000000}"#))

        let signature = try base64URLDecode(parts[2])
        #expect(signature.count == 64, "raw R||S, not DER")
        let ecdsa = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        let signingInput = Data("\(parts[0]).\(parts[1])".utf8)
        #expect(privateKey.publicKey.isValidSignature(ecdsa, for: signingInput))
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(ecdsa, for: signingInput))
        #expect(token.authorization == "bearer " + token.jwt)
    }

    @Test("printing a token or a key never shows the signature or key material")
    func redaction() throws {
        let key = ProviderKey.generate()
        let token = try ProviderToken(key: key, issuedAt: Date())
        let signature = String(token.jwt.split(separator: ".")[2])
        var dumped = ""
        dump(token, to: &dumped)
        dump(key, to: &dumped)
        for text in ["\(token)", String(reflecting: token), dumped, token.redacted, "\(key)", String(reflecting: key)] {
            #expect(!text.contains(signature))
            #expect(!text.contains("PRIVATE KEY"))
        }
        #expect(token.redacted.hasSuffix(".<redacted>"))
        #expect(token.redacted.split(separator: ".").count == 3)
    }

    @Test("a .p8 file loads; its Key ID and Team ID are checked")
    func loadsFile() throws {
        let directory = try ScratchDirectory()
        let path = try directory.write("AuthKey_ABC123DEFG.p8", P256.Signing.PrivateKey().pemRepresentation)
        let key = try ProviderKey(contentsOfFile: path, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        #expect(key.keyID == "ABC123DEFG")
        let emptyKeyID = #expect(throws: ProviderKeyError.self) { try ProviderKey(contentsOfFile: path, keyID: "", teamID: "T") }
        #expect(emptyKeyID?.code == .invalidKeyID)
        let badTeam = #expect(throws: ProviderKeyError.self) { try ProviderKey(contentsOfFile: path, keyID: "K", teamID: "a\"b") }
        #expect(badTeam?.code == .invalidTeamID)
        let missing = #expect(throws: ProviderKeyError.self) {
            try ProviderKey(contentsOfFile: directory.file("nope.p8"), keyID: "K", teamID: "T")
        }
        #expect(missing?.code == .unreadableFile)
        #expect(missing?.message.contains("No such file or directory") == true)
    }

    @Test("anything but a PKCS#8 P-256 PEM key is refused with what it is")
    func refusesOtherKeys() async throws {
        let directory = try ScratchDirectory()
        let rsa = try await runCommand("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"]).standardOutput
        let ed25519 = try await runCommand("openssl", ["genpkey", "-algorithm", "ed25519"]).standardOutput
        let sec1 = try await runCommand("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout"]).standardOutput
        let p256Path = try directory.write("p256.pem", sec1)
        let encrypted = try await runCommand("openssl", ["pkcs8", "-topk8", "-in", p256Path, "-passout", "pass:secret", "-v2", "aes-256-cbc"]).standardOutput
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        let certificateLike = "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"
        let garbage = "-----BEGIN PRIVATE KEY-----\nMAMCAQA=\n-----END PRIVATE KEY-----\n"

        let cases: [(String, ProviderKeyError.Code, String)] = [
            (rsa, .wrongKeyType, "RSA"),
            (ed25519, .wrongKeyType, "Ed25519"),
            (sec1, .notPKCS8, "openssl pkcs8 -topk8"),
            (encrypted, .encrypted, "encrypted"),
            (p384, .wrongCurve, "P-384"),
            (certificateLike, .wrongKeyType, "CERTIFICATE"),
            (garbage, .malformed, "PKCS#8"),
            ("not a key at all", .notPEM, "not a PEM file"),
            ("", .notPEM, "not a PEM file"),
        ]
        for (pem, code, mention) in cases {
            let error = #expect(throws: ProviderKeyError.self) { try ProviderKey(pem: pem, keyID: "K", teamID: "T") }
            #expect(error?.code == code, "\(mention)")
            #expect(error?.message.contains(mention) == true, "\(error?.message ?? "")")
        }
    }
}

@Suite("Provider token renewal")
struct ProviderTokenIssuerTests {
    let key = ProviderKey.generate()

    @Test("one token is reused until it is 50 minutes old, then renewed")
    func renewsAfterFiftyMinutes() throws {
        let clock = ManualProviderTokenClock()
        let issuer = ProviderTokenIssuer(key: key, clock: clock)
        let first = try issuer.currentToken()
        #expect(first.issuedAt == clock.now())
        for _ in 0..<49 {
            clock.advance(by: .seconds(60))
            #expect(try issuer.currentToken() == first)
        }
        clock.advance(by: .seconds(59))
        #expect(try issuer.currentToken() == first)
        clock.advance(by: .seconds(1))
        let second = try issuer.currentToken()
        #expect(second != first)
        #expect(second.issuedAt == first.issuedAt.addingTimeInterval(3000))
        #expect(issuer.tokensMinted == 2)
    }

    @Test("the renewal age is configurable but never below 20 minutes nor past the hour")
    func clamped() throws {
        #expect(ProviderTokenIssuer.Policy(renewalAge: .seconds(60)).renewalAge == .seconds(1200))
        #expect(ProviderTokenIssuer.Policy(renewalAge: .seconds(7200)).renewalAge == .seconds(3540))
        #expect(ProviderTokenIssuer.Policy(renewalAge: .seconds(1800)).renewalAge == .seconds(1800))

        let clock = ManualProviderTokenClock()
        let issuer = ProviderTokenIssuer(key: key, policy: .init(renewalAge: .seconds(5)), clock: clock)
        let first = try issuer.currentToken()
        clock.advance(by: .seconds(19 * 60 + 59))
        #expect(try issuer.currentToken() == first)
        clock.advance(by: .seconds(1))
        #expect(try issuer.currentToken() != first)
    }

    @Test("ExpiredProviderToken renews at once, but a burst of rejections of the same token mints only one")
    func renewsAfterRejection() throws {
        let clock = ManualProviderTokenClock()
        let issuer = ProviderTokenIssuer(key: key, clock: clock)
        let first = try issuer.currentToken()
        clock.advance(by: .seconds(1))
        let second = try issuer.renew(afterRejectionOf: first)
        #expect(second != first)
        for _ in 0..<100 { #expect(try issuer.renew(afterRejectionOf: first) == second) }
        #expect(try issuer.currentToken() == second)
        #expect(issuer.tokensMinted == 2)
    }

    @Test("a wall-clock jump neither renews early nor keeps a token past its age")
    func wallClockJumps() throws {
        let clock = ManualProviderTokenClock()
        let issuer = ProviderTokenIssuer(key: key, clock: clock)
        let first = try issuer.currentToken()
        clock.setWallClock(to: clock.now().addingTimeInterval(-7200))  // NTP steps back two hours
        clock.advance(by: .seconds(600))
        #expect(try issuer.currentToken() == first)
        clock.setWallClock(to: clock.now().addingTimeInterval(86400))  // and forward a day
        #expect(try issuer.currentToken() == first)
        clock.advance(by: .seconds(2400))  // 50 minutes of real time in all
        let second = try issuer.currentToken()
        #expect(second != first)
        #expect(second.issuedAt.timeIntervalSince1970 == clock.now().timeIntervalSince1970.rounded(.down))
    }

    @Test("many concurrent callers get one token")
    func concurrent() async throws {
        let issuer = ProviderTokenIssuer(key: key, clock: ManualProviderTokenClock())
        let tokens = try await withThrowingTaskGroup(of: ProviderToken.self) { group in
            for _ in 0..<200 { group.addTask { try issuer.currentToken() } }
            return try await group.reduce(into: Set<ProviderToken>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(issuer.tokensMinted == 1)
    }

    @Test("the shared issuer is one per (team, key) in the process")
    func shared() throws {
        let a = ProviderTokenIssuer.shared(for: key)
        #expect(a === ProviderTokenIssuer.shared(for: key))
        let sameKeyOtherTeam = try ProviderKey(pem: key.pemRepresentation, keyID: key.keyID, teamID: "OTHERTEAM1")
        #expect(a !== ProviderTokenIssuer.shared(for: sameKeyOtherTeam))
        #expect(a !== ProviderTokenIssuer.shared(for: ProviderKey.generate()))
        let reloaded = try ProviderKey(pem: key.pemRepresentation, keyID: key.keyID, teamID: key.teamID)
        #expect(a === ProviderTokenIssuer.shared(for: reloaded))
        #expect(try a.currentToken() == ProviderTokenIssuer.shared(for: reloaded).currentToken())
    }
}
