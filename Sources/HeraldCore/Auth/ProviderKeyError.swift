/// A provider key (`.p8`) or its identifiers that cannot be used: what is wrong and what to do.
/// Never contains key material.
public struct ProviderKeyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        public static let unreadableFile = Code(name: "unreadableFile")
        public static let notPEM = Code(name: "notPEM")
        public static let encrypted = Code(name: "encrypted")
        public static let notPKCS8 = Code(name: "notPKCS8")
        public static let wrongKeyType = Code(name: "wrongKeyType")
        public static let wrongCurve = Code(name: "wrongCurve")
        public static let malformed = Code(name: "malformed")
        public static let invalidKeyID = Code(name: "invalidKeyID")
        public static let invalidTeamID = Code(name: "invalidTeamID")
        public static let signingFailed = Code(name: "signingFailed")
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
