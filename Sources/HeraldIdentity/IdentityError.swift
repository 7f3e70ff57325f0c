/// A certificate or key that cannot be used: what is wrong and what to do. Never holds a password
/// or key material.
public struct IdentityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        public static let unreadableFile = Code(name: "unreadableFile")
        /// The `.p12` password is wrong (or missing).
        public static let wrongPassword = Code(name: "wrongPassword")
        /// The file is not a certificate, key or `.p12` Herald can read.
        public static let malformed = Code(name: "malformed")
        public static let noCertificate = Code(name: "noCertificate")
        public static let noPrivateKey = Code(name: "noPrivateKey")
        /// The private key does not belong to the certificate.
        public static let keyMismatch = Code(name: "keyMismatch")
        public static let expired = Code(name: "expired")
        public static let notYetValid = Code(name: "notYetValid")
        /// The certificate is for something else (e.g. a push certificate where a pass certificate is needed).
        public static let wrongKind = Code(name: "wrongKind")
        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
