/// A payload that cannot be built or encoded: what was wrong and how to fix it.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// `aps` given as a custom key: Apple's keys go in ``Payload/aps``.
        public static let reservedKey = Code(name: "reservedKey")
        /// A NaN or infinite number: JSON cannot carry it.
        public static let nonFiniteNumber = Code(name: "nonFiniteNumber")
        /// A raw payload that is not valid JSON.
        public static let invalidJSON = Code(name: "invalidJSON")
        /// A raw payload that is JSON but not an object.
        public static let notAnObject = Code(name: "notAnObject")
        /// An `Encodable` value that `JSONEncoder` could not encode.
        public static let unencodable = Code(name: "unencodable")
        /// A value outside its allowed range (e.g. a negative badge, a volume above 1).
        public static let outOfRange = Code(name: "outOfRange")
        /// The payload has no alert body that could be shortened.
        public static let nothingToShorten = Code(name: "nothingToShorten")

        public var description: String { name }
    }

    public var code: Code
    /// What was wrong, in words.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
