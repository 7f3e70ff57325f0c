import Crypto
import HeraldCore
import HeraldFCM
import HeraldGateway
import NIOSSL

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `herald doctor`'s check that the trust store holds the roots the push services' hosts chain
/// to. A minimal container image with an old or no CA bundle fails every TLS handshake with them,
/// and nothing says why until the first send.
enum DoctorTrustStore {
    /// A root certificate, known by the SHA-256 of its SubjectPublicKeyInfo (which a re-issued
    /// root with the same key keeps).
    struct Root: Sendable, Hashable {
        var name: String
        var spkiSHA256: String
    }

    /// A push service's hosts and the roots any one of which their chains end at.
    struct Service: Sendable {
        var name: String
        var roots: [Root]
        /// Why the roots are needed, for the error's line.
        var why: String
    }

    // The SPKI digests below were computed from Debian bookworm's ca-certificates 20230311
    // (/usr/share/ca-certificates/mozilla/NAME.crt) with
    // `openssl x509 -in NAME.crt -noout -pubkey | openssl pkey -pubin -outform DER | openssl dgst -sha256`.

    /// APNs (api.push.apple.com, api.sandbox.push.apple.com). Apple's developer news "Apple Push
    /// Notification service server certificate update" moved APNs to the SHA-2 root USERTrust RSA
    /// Certification Authority (sandbox on 20 January 2025, production on 24 February 2025).
    /// The old root, AAA Certificate Services, served only during the changeover, and Debian's
    /// bundle no longer carries it.
    static let apple = Service(
        name: "APNs",
        roots: [Root(name: "USERTrust RSA Certification Authority", spkiSHA256: "c784333d20bcd742b9fdc3236f4e509b8937070e73067e254dd3bf9c45bf4dde")],
        why: "APNs's servers chain to it since 2025"
    )

    /// FCM and Google's OAuth token host (fcm.googleapis.com, oauth2.googleapis.com), and
    /// Chrome's Web Push endpoints (fcm.googleapis.com): Google Trust Services' roots, which
    /// Google's hosts may chain to any of, and GlobalSign Root CA, which cross-signs GTS Root R1.
    static let google = Service(
        name: "Google",
        roots: [
            Root(name: "GTS Root R1", spkiSHA256: "871a9194f4eed5b312ff40c84c1d524aed2f778bbff25f138cf81f680a7adc67"),
            Root(name: "GTS Root R2", spkiSHA256: "55f77de41c03792428f8d518c55104225be43a5598d926a528ad653e1ccec7bf"),
            Root(name: "GTS Root R3", spkiSHA256: "4179edd981ef747477b49626408af43daa2ca7ab7f9e082c1060f84096774348"),
            Root(name: "GTS Root R4", spkiSHA256: "9847e5653e5e9e847516e5cb818606aa7544a19be67fd7366d506988e8d84347"),
            Root(name: "GlobalSign Root CA", spkiSHA256: "2bcee858158cf5465fc9d76f0dfa312fef25a4dca8501da9b46b67d1fbfa1b64"),
        ],
        why: "fcm.googleapis.com and oauth2.googleapis.com chain to them"
    )

    /// The bundle NIOSSL's default trust roots read on Linux: the first of these that exists
    /// (swift-nio-ssl's `LinuxCABundle.swift`).
    static let systemBundles = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"]

    /// The apps that need each service's roots: only platforms an app uses, and only when it
    /// sends to the real hosts (an app pointed at a mock trusts the mock's CA instead).
    static func needs(_ configuration: GatewayConfiguration) -> [(service: Service, apps: [String])] {
        var apple: [String] = []
        var google: [String] = []
        for app in configuration.apps {
            let hosts = [app.environment] + Array(app.environments.values)
            if app.credentials != nil, hosts.contains(where: { $0.kind != .custom }) { apple.append(app.id) }
            let fcmAtGoogle = app.fcm.map { fcm in
                fcm.endpoint == FCMClient.googleEndpoint || fcm.serviceAccount.tokenURI.hasPrefix("https://oauth2.googleapis.com/")
            } ?? false
            // Browsers' push services are wherever subscriptions say; Chrome's are Google's. An
            // app given a caFile for them sends to a mock (or its own service).
            let webPushAtGoogle = app.webPush.map { $0.trustRoots.isEmpty } ?? false
            if fcmAtGoogle || webPushAtGoogle { google.append(app.id) }
        }
        return [(apple, self.apple), (google, self.google)].filter { !$0.0.isEmpty }.map { ($0.1, $0.0) }
    }

    /// The rows: the bundle read, then each needed service's roots found in it or not.
    static func check(_ configuration: GatewayConfiguration, bundle given: String?) -> [DoctorCheck] {
        let needed = needs(configuration)
        guard !needed.isEmpty else { return [] }
        guard let path = given ?? systemBundles.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            return [
                .error(
                    "trust store",
                    "no system CA bundle (\(systemBundles.joined(separator: ", "))): every TLS handshake with the push services fails; install the ca-certificates package"
                )
            ]
        }
        let name = "trust store \(path)"
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            return [.error(name, "cannot be read as PEM certificates (\(error)): install the ca-certificates package, or give --trust-store a PEM bundle")]
        }
        guard !certificates.isEmpty else { return [.error(name, "holds no PEM certificate: install the ca-certificates package, or give --trust-store a PEM bundle")] }
        let digests = Set(certificates.compactMap { try? spkiDigest($0) })
        var rows: [DoctorCheck] = [.ok(name, "\(certificates.count) certificates")]
        for (service, apps) in needed {
            let rowName = "trust store: \(service.name) roots"
            let present = service.roots.filter { digests.contains($0.spkiSHA256) }
            let missing = service.roots.filter { !digests.contains($0.spkiSHA256) }
            let forApps = "app\(apps.count == 1 ? "" : "s") \(apps.joined(separator: ", "))"
            if present.isEmpty {
                rows.append(
                    .error(
                        rowName,
                        "\(missing.map(\.name).joined(separator: ", ")) missing (\(service.why); needed by \(forApps)): every TLS handshake will fail; "
                            + "update the ca-certificates package (apt-get install ca-certificates) or the bundle given"
                    )
                )
            } else if !missing.isEmpty {
                rows.append(
                    .warning(
                        rowName,
                        "\(present.map(\.name).joined(separator: ", ")) present, \(missing.map(\.name).joined(separator: ", ")) missing (\(forApps)): "
                            + "update the ca-certificates package, since the hosts may move to another of these roots"
                    )
                )
            } else {
                rows.append(.ok(rowName, "\(present.map(\.name).joined(separator: ", ")) present (\(forApps))"))
            }
        }
        return rows
    }

    /// The SHA-256 of a certificate's SubjectPublicKeyInfo, in lower-case hex.
    static func spkiDigest(_ certificate: NIOSSLCertificate) throws -> String {
        let spki = try certificate.extractPublicKey().toSPKIBytes()
        return SHA256.hash(data: spki).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
