/// How a document gives an app's secrets (keys, certificates, passwords, service accounts): the
/// one parser of an app reads both forms, each where it belongs.
enum CredentialForm: Sendable, Hashable {
    /// The configuration file: a secret is a file on the server (relative to the file) or the name
    /// of an environment variable, never the secret itself (`authKey.file`, `passwordEnv`).
    case files
    /// An app defined through the admin API: each secret is given inline (`authKey.pem`,
    /// `certificate.p12Base64`, `password`). A path or a variable name is refused: which files and
    /// variables of the server a secret is read from is not the caller's to name.
    case inline
}

extension JSONFields {
    /// Refuses a field of the other form than these fields' document gives secrets in: inline,
    /// one of `files` (a path or a variable name); in the configuration file, one of `inline` (a
    /// secret itself). The message says which field the form takes instead.
    /// `files` and `inline` are the fields of each form; `filesHint` and `inlineHint` say what each
    /// form gives, where the names alone do not (`p12Base64 (with password) or pem (with keyPem)`).
    func checkCredentialForm(files: [String], inline: [String], filesHint: String? = nil, inlineHint: String? = nil) throws(FieldError) {
        switch credentials {
        case .inline:
            guard let given = files.first(where: has) else { return }
            throw FieldError(
                at(given),
                "names a file or an environment variable of the server, which the admin API does not read: give \(inlineHint ?? Self.alternatives(inline)) inline"
            )
        case .files:
            guard let given = inline.first(where: has) else { return }
            throw FieldError(
                at(given), "holds a secret, which the configuration file never does: give \(filesHint ?? Self.alternatives(files)) (the admin API takes \(given))")
        }
    }

    private static func alternatives(_ names: [String]) -> String {
        names.count <= 1 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
    }
}
