import HeraldAPNS
import HeraldCore
import HeraldIdentity

/// An app's definition as the admin API takes it (`PUT /v1/admin/apps/{app}`): an `apps[]` entry
/// of the configuration file with every secret inline (``CredentialForm/inline``), read by the
/// file's own parser.
extension GatewayConfiguration.App {
    /// The largest definition taken: a few certificates and service accounts fit many times over.
    static let maximumDefinitionSize = 256 << 10

    /// The app `id` as `document` (a JSON object) defines it. The document's `id`, when given,
    /// must be `id`.
    ///
    /// - Throws: ``FieldError`` naming the field (`apns.authKey.pem`) and what is wrong, never a
    ///   secret.
    init(id: String, definition document: JSONValue) throws(FieldError) {
        guard Self.isValidID(id) else { throw FieldError("id", "must be 1 to 64 of a-z 0-9 . _ - (it is part of the API's paths)") }
        guard case .object(var members) = document else { throw FieldError("", "must be a JSON object: an apps[] entry of the configuration file") }
        if let given = members["id"], given != .string(id) { throw FieldError("id", "must be the ID in the path, \(id), or left out") }
        members["id"] = .string(id)
        let fields = try JSONFields(.object(members), path: "", credentials: .inline)
        try self.init(fields, directory: "", environment: [:])
        if let matrix = try fields.object("matrix") { self.matrix = try Self.matrix(matrix, reaches: platforms) }
    }

    /// The app a stored definition (its JSON text, as ``definitionText(of:id:)`` wrote it) defines.
    init(id: String, definition bytes: [UInt8]) throws(FieldError) {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw FieldError("", "not valid JSON: \(error)")
        }
        try self.init(id: id, definition: document)
    }

    /// A definition as it is sealed and stored: the document with its ID, compact.
    static func definitionText(of document: JSONValue, id: String) -> [UInt8] {
        guard case .object(var members) = document else { return Array(document.jsonString.utf8) }
        members["id"] = .string(id)
        return Array(JSONValue.object(members).jsonString.utf8)
    }

    /// Inline `{p12Base64, password?}` (the `.p12` file in base64) or `{pem, keyPem?}` (the
    /// certificate's PEM text with its key, or the key in `keyPem`).
    static func inlineCertificate(_ certificate: JSONFields) throws(FieldError) -> APNSCredentials {
        let p12 = try certificate.string("p12Base64")
        let pem = try certificate.string("pem")
        let secret = p12 != nil ? "p12Base64" : "pem"
        do {
            switch (p12, pem) {
            case (let base64?, nil):
                if certificate.has("keyPem") { throw FieldError(certificate.at("keyPem"), "goes with pem: a .p12 holds its own key") }
                guard let bytes = decodeBase64(base64), !bytes.isEmpty else {
                    throw FieldError(certificate.at("p12Base64"), "must be the .p12 file in base64 (base64 -w0 push.p12)")
                }
                return .certificate(try CertificateIdentity(pkcs12: bytes, password: try certificate.string("password"), source: "the .p12"))
            case (nil, let pem?):
                if certificate.has("password") { throw FieldError(certificate.at("password"), "goes with p12Base64: give the key in keyPem unencrypted") }
                return .certificate(try CertificateIdentity(certificatePEM: pem, keyPEM: try certificate.string("keyPem") ?? pem, source: "the certificate"))
            default:
                throw FieldError(
                    certificate.path, "give p12Base64 (the .p12 file in base64, with its password) or pem (the certificate and its key, or the key in keyPem)")
            }
        } catch let error as FieldError {
            throw error
        } catch let error as IdentityError {
            if error.code == .wrongPassword {
                throw FieldError(certificate.at("password"), certificate.has("password") ? "is not the .p12's password" : "is required: the .p12 is protected by one")
            }
            throw FieldError(certificate.at(secret), error.message)
        } catch {
            throw FieldError(certificate.at(secret), "cannot be read as a certificate and its key")
        }
    }

    /// Standard base64 (RFC 4648 §4), padded or not, line breaks and spaces ignored.
    static func decodeBase64(_ text: String) -> [UInt8]? {
        var converted: [UInt8] = []
        converted.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "+"): converted.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): converted.append(UInt8(ascii: "_"))
            case UInt8(ascii: "-"), UInt8(ascii: "_"): return nil
            case 0x20, 0x0A, 0x0D, 0x09: continue
            default: converted.append(byte)
            }
        }
        return Base64URL.decode(String(decoding: converted, as: UTF8.self))
    }
}

extension JSONFields {
    /// The JSON object at `name` as its text (a service account's key file given inline).
    func inlineObject(_ name: String) throws(FieldError) -> [UInt8] {
        guard case .object? = members[name] else {
            throw FieldError(at(name), members[name] == nil ? "is required" : "must be a JSON object: the key file's contents")
        }
        return Array(members[name]!.jsonString.utf8)
    }
}
