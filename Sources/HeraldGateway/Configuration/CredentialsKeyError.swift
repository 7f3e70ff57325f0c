/// Why the credentials keys cannot seal or open.
public struct CredentialsKeyError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        public var description: String { name }
        /// Not 32 bytes of base64.
        public static let invalidKey = Code(name: "invalidKey")
        /// Sealed with a key these are not.
        public static let unknownKey = Code(name: "unknownKey")
        /// Does not open: changed, or sealed for another app.
        public static let cannotOpen = Code(name: "cannotOpen")
        public static let cannotSeal = Code(name: "cannotSeal")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
