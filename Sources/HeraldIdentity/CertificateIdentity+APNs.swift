import SwiftASN1
import X509

extension CertificateIdentity {
    /// `1.2.840.113635.100.6.3.1`: the certificate works with the development (sandbox) environment.
    static let developmentOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 3, 1]
    /// `1.2.840.113635.100.6.3.2`: the certificate works with the production environment.
    static let productionOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 3, 2]
    /// `1.2.840.113635.100.6.3.6`: the topic list of a universal certificate.
    public static let topicsOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 3, 6]
    /// `1.2.840.113635.100.6.3.4`: also carries topics (VoIP).
    public static let voipTopicsOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 3, 4]

    /// The topics the certificate lists in its `…6.3.6` (or `…6.3.4`) extension (apns-spec §7.2);
    /// empty for a single-topic certificate, whose topic is ``subjectUID``.
    public var listedTopics: [String] { certificate.apnsListedTopics }

    /// The topic APNs uses when a request has no `apns-topic`: the subject UID, for a certificate
    /// without a topic list. A certificate with a list has no default (`MissingTopic`).
    public var defaultTopic: String? {
        listedTopics.isEmpty ? subjectUID : nil
    }

    /// Whether the certificate may push to `topic`.
    public func allows(topic: String) -> Bool {
        let listed = listedTopics
        if listed.isEmpty { return topic == subjectUID || (subjectUID.map { topic.hasPrefix($0 + ".") } ?? false) }
        return listed.contains(topic) || topic == subjectUID
    }

    /// Whether the certificate carries the development and production environment extensions.
    public var environments: (development: Bool, production: Bool) {
        (certificate.extensions[oid: Self.developmentOID] != nil, certificate.extensions[oid: Self.productionOID] != nil)
    }

    /// Parses `SEQUENCE { UTF8String topic, SEQUENCE OF UTF8String types, … }` (§7.2). Anything
    /// unexpected yields the topics read so far.
    static func parseTopicList(_ value: ArraySlice<UInt8>) -> [String] {
        guard let root = try? DER.parse(value), case .constructed(let nodes) = root.content else { return [] }
        var topics: [String] = []
        for node in nodes {
            if let topic = try? ASN1UTF8String(derEncoded: node) {
                topics.append(String(topic))
            }
        }
        return topics
    }
}

extension Certificate {
    /// The subject's UID attribute: the topic of an APNs certificate (apns-spec §7.2).
    public var apnsSubjectUID: String? {
        for rdn in subject {
            for attribute in rdn where attribute.type == CertificateIdentity.uidOID {
                return String(attribute.value)
            }
        }
        return nil
    }

    /// The topics listed in the `…6.3.6` / `…6.3.4` extensions; empty for a single-topic certificate.
    public var apnsListedTopics: [String] {
        var topics: [String] = []
        for oid in [CertificateIdentity.topicsOID, CertificateIdentity.voipTopicsOID] {
            guard let ext = extensions[oid: oid] else { continue }
            topics.append(contentsOf: CertificateIdentity.parseTopicList(ext.value))
        }
        return topics
    }
}
