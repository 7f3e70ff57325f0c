import Foundation
import HeraldAPNS
import HeraldCore
import HeraldIdentity
import HeraldAPNSMock
import HeraldTestSupport
import NIOSSL
import Testing
import X509

/// Writes an identity's certificate and key as PEM files.
func writePEM(_ identity: CertificateIdentity, in directory: ScratchDirectory, name: String) throws -> (certificate: String, key: String) {
    let certificate = try directory.write("\(name).crt.pem", identity.certificate.serializeAsPEM().pemString)
    let key = try directory.write("\(name).key.pem", identity.privateKey.serializeAsPEM().pemString)
    return (certificate, key)
}

@Suite("Certificates: .p12 and PEM loading, certificate authentication", .timeLimit(.minutes(6)))
struct CertificateAuthTests {
    let files: ScratchDirectory
    let authority: MockCertificateAuthority

    init() throws {
        files = try ScratchDirectory()
        authority = try MockCertificateAuthority(name: "Herald Test Client CA")
    }

    /// A `.p12` made by openssl: `legacy` uses RC2-40 and 3DES with a SHA-1 MAC (macOS Keychain
    /// exports), otherwise OpenSSL 3's AES-256-CBC with PBKDF2.
    func p12(_ identity: CertificateIdentity, legacy: Bool, password: String, name: String) async throws -> String {
        let output = try await files.p12(
            certificatePEM: identity.certificate.serializeAsPEM().pemString, keyPEM: identity.privateKey.serializeAsPEM().pemString,
            legacy: legacy, password: password, name: name
        )
        if legacy {
            // openssl prints the encryption on standard error.
            let info = try await runCommand("openssl", ["pkcs12", "-in", output, "-info", "-noout", "-legacy", "-passin", "pass:\(password)"]).all
            #expect(info.contains("40BitRC2"), "really the legacy encryption")
        }
        return output
    }

    @Test("legacy (RC2-40/3DES) and modern (AES-256/PBKDF2) .p12 files load, EC and RSA keys")
    func p12Encryptions() async throws {
        let ec = try authority.issuePushCertificate(topic: "com.example.ec")
        for legacy in [true, false] {
            let loaded = try CertificateIdentity(file: await p12(ec, legacy: legacy, password: "s3cret", name: "ec-\(legacy)"), password: "s3cret")
            #expect(loaded.subjectUID == "com.example.ec")
            #expect(loaded.defaultTopic == "com.example.ec")
            #expect(loaded.certificate == ec.certificate)
            #expect(loaded.environments == (true, true))
        }
        // Apple issues RSA 2048 certificates.
        let key = files.file("rsa.key.pem")
        let certificate = files.file("rsa.crt.pem")
        try await runCommand("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "30",
                            "-subj", "/UID=com.example.rsa/CN=Apple Push Services: com.example.rsa/OU=TEAM123456/C=US"])
        for legacy in [true, false] {
            let output = files.file("rsa-\(legacy).p12")
            try await runCommand("openssl", ["pkcs12", "-export"] + (legacy ? ["-legacy"] : []) + ["-in", certificate, "-inkey", key, "-passout", "pass:pw", "-out", output])
            let loaded = try CertificateIdentity(file: output, password: "pw")
            #expect(loaded.subjectUID == "com.example.rsa")
            #expect(loaded.organizationalUnit == "TEAM123456")
        }
        let pem = try CertificateIdentity(file: certificate, keyFile: key)
        #expect(pem.subjectUID == "com.example.rsa")
    }

    @Test("a wrong or missing .p12 password is named as such, never echoed")
    func wrongPassword() async throws {
        let path = try await p12(authority.issuePushCertificate(topic: "com.example.pw"), legacy: true, password: "right-password", name: "pw")
        let wrong = #expect(throws: IdentityError.self) { try CertificateIdentity(file: path, password: "wrong-password") }
        #expect(wrong?.code == .wrongPassword)
        #expect(wrong?.message.contains("wrong-password") == false)
        let missing = #expect(throws: IdentityError.self) { try CertificateIdentity(file: path) }
        #expect(missing?.code == .wrongPassword)
        #expect(missing?.message.contains("HERALD_CERT_PASSWORD") == true)
    }

    @Test("a .p12 with an empty password loads with no password given")
    func emptyPassword() async throws {
        let path = try await p12(authority.issuePushCertificate(topic: "com.example.empty"), legacy: false, password: "", name: "empty")
        #expect(try CertificateIdentity(file: path).subjectUID == "com.example.empty")
        #expect(try CertificateIdentity(file: path, password: "").subjectUID == "com.example.empty")
    }

    @Test("PEM: separate files or one file; a key that is not the certificate's is refused")
    func pemFiles() throws {
        let identity = try authority.issuePushCertificate(topic: "com.example.pem")
        let (certificate, key) = try writePEM(identity, in: files, name: "pem")
        #expect(try CertificateIdentity(file: certificate, keyFile: key).subjectUID == "com.example.pem")
        let combined = try files.write("combined.pem", String(contentsOfFile: certificate, encoding: .utf8) + String(contentsOfFile: key, encoding: .utf8))
        #expect(try CertificateIdentity(file: combined).subjectUID == "com.example.pem")
        let (_, otherKey) = try writePEM(authority.issuePushCertificate(topic: "com.example.other"), in: files, name: "other")
        let mismatch = #expect(throws: IdentityError.self) { try CertificateIdentity(file: certificate, keyFile: otherKey) }
        #expect(mismatch?.code == .keyMismatch)
        let noKey = #expect(throws: IdentityError.self) { try CertificateIdentity(file: certificate) }
        #expect(noKey?.code == .noPrivateKey)
        let missing = #expect(throws: IdentityError.self) { try CertificateIdentity(file: files.file("absent.pem")) }
        #expect(missing?.code == .unreadableFile)
        #expect(missing?.message.contains("No such file or directory") == true)
        let garbage = try files.write("garbage.p12", "not a certificate at all")
        let unreadable = #expect(throws: IdentityError.self) { try CertificateIdentity(file: garbage, password: "x") }
        #expect(unreadable?.code == .malformed || unreadable?.code == .wrongPassword)
    }

    @Test("validity: expired is an error, expiring within 30 days a warning")
    func validity() throws {
        let expired = try authority.issuePushCertificate(topic: "com.example.old", validFor: -60)
        let error = #expect(throws: IdentityError.self) { _ = try expired.checkValidity() }
        #expect(error?.code == .expired)
        let soon = try authority.issuePushCertificate(topic: "com.example.soon", validFor: 10 * 86400)
        #expect(try soon.checkValidity()?.contains("expires on") == true)
        let fine = try authority.issuePushCertificate(topic: "com.example.fine")
        #expect(try fine.checkValidity() == nil)
    }

    @Test("the topic list extension of a universal certificate is read (apns-spec §7.2)")
    func topicList() throws {
        let identity = try authority.issuePushCertificate(topic: "com.example.multi", topics: ["com.example.multi", "com.example.multi.voip"])
        #expect(identity.listedTopics == ["com.example.multi", "com.example.multi.voip"])
        #expect(identity.defaultTopic == nil)
        #expect(identity.allows(topic: "com.example.multi.voip"))
        #expect(!identity.allows(topic: "com.other"))
    }

    func mockRequiringCertificates() async throws -> MockAPNSServer {
        var configuration = MockAPNSServer.Configuration()
        configuration.clientCertificateAuthorities = [try authority.tlsCertificate]
        configuration.recordLimit = 100
        let server = try MockAPNSServer(configuration: configuration)
        try await server.start()
        return server
    }

    func clientConfiguration(_ server: MockAPNSServer, _ identity: CertificateIdentity) -> APNSClient.Configuration {
        var configuration = APNSClient.Configuration(environment: server.environment, credentials: .certificate(identity))
        configuration.trustRoots = .only(server.trustRoots)
        configuration.retry = .none
        return configuration
    }

    @Test("certificate authentication from a legacy .p12: the topic defaults to the certificate's UID")
    func certificateAuthentication() async throws {
        let server = try await mockRequiringCertificates()
        let identity = try CertificateIdentity(
            file: await p12(authority.issuePushCertificate(topic: "com.example.cert"), legacy: true, password: "pw", name: "auth"), password: "pw"
        )
        var withoutTopic = try notification(to: token(1))
        withoutTopic.headers.topic = nil
        try await withAPNSClient(configuration: clientConfiguration(server, identity)) { client in
            _ = try await client.send(withoutTopic)
            let location = try PushNotification(
                token: DeviceToken(token(2)), headers: PushHeaders(pushType: .location, topic: "com.example.cert.location-query"), payload: Payload()
            )
            let error = await #expect(throws: APNSClientError.self) { try await client.send(location) }
            #expect(error?.code == .invalidCredentials)
        }
        #expect(server.accepted.map(\.topic) == ["com.example.cert"])
        try await server.shutdown()
    }

    @Test("a universal certificate: its listed topics work, others are refused, and a topic is required")
    func universalCertificate() async throws {
        let server = try await mockRequiringCertificates()
        let identity = try authority.issuePushCertificate(topic: "com.example.multi", topics: ["com.example.multi", "com.example.multi.voip"])
        try await withAPNSClient(configuration: clientConfiguration(server, identity)) { client in
            var voip = try notification(to: token(1), topic: "com.example.multi.voip")
            voip.headers.pushType = .voip
            _ = try await client.send(voip)
            let other = await #expect(throws: APNSError.self) { try await client.send(notification(to: token(2), topic: "com.example.other")) }
            #expect(other?.reason == .badTopic)
            #expect(other?.origin == .server)
            var none = try notification(to: token(3))
            none.headers.topic = nil
            let missing = await #expect(throws: APNSError.self) { try await client.send(none) }
            #expect(missing?.reason == .missingTopic)
        }
        try await server.shutdown()
    }

    @Test("a certificate the server does not trust fails the TLS handshake, and the send fails with it")
    func untrustedClientCertificate() async throws {
        let server = try await mockRequiringCertificates()
        let stranger = try MockCertificateAuthority(name: "Someone Else").issuePushCertificate(topic: "com.example.cert")
        var configuration = clientConfiguration(server, stranger)
        configuration.pool.maximumConnectAttempts = 1
        let error = await #expect(throws: APNSClientError.self) {
            try await withAPNSClient(configuration: configuration) { client in
                try await client.send(notification(to: token(1), topic: "com.example.cert"))
            }
        }
        #expect(error?.code == .tlsFailed || error?.code == .connectionFailed || error?.code == .connectionLost, "\(String(describing: error))")
        #expect(server.acceptedCount == 0)
        try await server.shutdown()
    }
}
