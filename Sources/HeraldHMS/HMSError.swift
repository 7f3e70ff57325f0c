/// Credentials, a message or a push token that cannot be used: what is wrong, naming the field.
/// Never contains a client secret, a private key, an access token or a JWT.
public struct HMSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// App credentials (client ID and secret) that cannot be used: a client ID that is not
        /// 1 to 64 digits, an empty secret, a token URI that is not `https:`.
        public static let invalidCredentials = Code(name: "invalidCredentials")
        /// A service-account key file that cannot be read, is not JSON, lacks a field or holds a
        /// private key that is not an RSA key of 2048 bits or more.
        public static let invalidServiceAccount = Code(name: "invalidServiceAccount")
        /// A message Push Kit would refuse: no content, a payload over 4,096 bytes, a bad TTL,
        /// urgency, collapse key or click action, a raw message that is not an object.
        public static let invalidMessage = Code(name: "invalidMessage")
        /// Push tokens Push Kit would refuse: none, more than 1,000, a duplicate, or one with a
        /// character no push token has.
        public static let invalidToken = Code(name: "invalidToken")
        /// A client configuration that cannot work: no credentials, an endpoint that is not `https:`.
        public static let invalidConfiguration = Code(name: "invalidConfiguration")
        /// A service-account JWT that does not verify (the mock's check).
        public static let invalidJWT = Code(name: "invalidJWT")
        public var description: String { name }
    }

    public var code: Code
    /// What is wrong and, where it helps, what to do.
    public var message: String
    /// The field at fault (`message.android.ttl`, `target.token`), when one is.
    public var field: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { message }
}
