/// A service account, message or registration token that cannot be used: what is wrong, naming
/// the field. Never contains the private key, an assertion or an access token.
public struct FCMError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// A service-account file that cannot be read, is not JSON, lacks a field or holds a
        /// private key that is not an RSA key of 2048 bits or more.
        public static let invalidServiceAccount = Code(name: "invalidServiceAccount")
        /// A message FCM would refuse: a reserved data key, a payload over 4,096 bytes, a bad
        /// priority or TTL, a raw message that is not an object.
        public static let invalidMessage = Code(name: "invalidMessage")
        /// A registration token that is empty, longer than 4,096 characters or has a character
        /// other than letters, digits, `-`, `_` and `:`.
        public static let invalidToken = Code(name: "invalidToken")
        /// A client configuration that cannot work: an endpoint that is not `https:`, a project
        /// id that is not one.
        public static let invalidConfiguration = Code(name: "invalidConfiguration")
        /// An OAuth assertion that does not verify (the mock's token endpoint).
        public static let invalidAssertion = Code(name: "invalidAssertion")
        public var description: String { name }
    }

    public var code: Code
    /// What is wrong and, where it helps, what to do.
    public var message: String
    /// The field at fault, as FCM names it in a `BadRequest` (`message.data`,
    /// `message.android.ttl`, `message.token`), when one is.
    public var field: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { message }
}
