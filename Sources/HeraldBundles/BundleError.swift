/// A pass or push package that cannot be built, signed or trusted: what is wrong, naming the file
/// and key where there is one.
public struct BundleError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        public static let unreadable = Code(name: "unreadable")
        /// A required file is missing (`pass.json`, `icon.png`, an iconset image…).
        public static let missingFile = Code(name: "missingFile")
        /// A file that must not be there (an extra iconset image, a file in the zip not in the manifest).
        public static let unexpectedFile = Code(name: "unexpectedFile")
        /// A JSON file that does not parse, or is not an object.
        public static let invalidJSON = Code(name: "invalidJSON")
        public static let missingKey = Code(name: "missingKey")
        public static let invalidValue = Code(name: "invalidValue")
        /// An image that is not a PNG of the required size.
        public static let invalidImage = Code(name: "invalidImage")
        /// A path that leaves the bundle's directory (`..`, absolute, a symbolic link out).
        public static let pathEscape = Code(name: "pathEscape")
        /// The certificate does not fit the bundle (wrong kind, other identifier or team), or is unusable.
        public static let identity = Code(name: "identity")
        public static let signingFailed = Code(name: "signingFailed")
        /// More than 10 passes in a `.pkpasses` bundle.
        public static let tooManyPasses = Code(name: "tooManyPasses")
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
