/// Why the kit could not do what it was asked: a value with a stable ``code`` to match on, the
/// HTTP status when a server answered, and a description for people.
///
/// ```swift
/// do { try await device.register(deviceToken: token) }
/// catch let error where error.code == .rejected { … }
/// ```
public struct HeraldDeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, stable across releases: match on it, never on ``detail``.
    public struct Code: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
        /// The code's name, as ``description`` prints it.
        public let rawValue: String

        /// A code by its name; codes this version does not know compare by name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A clicked action's identifier is empty or longer than 64 bytes.
        public static let invalidAction = Code(rawValue: "invalidAction")
        /// A push token is empty, or an activity's identifier or type is empty.
        public static let invalidToken = Code(rawValue: "invalidToken")
        /// A file in the kit's directory could not be created, locked, read or written.
        public static let storage = Code(rawValue: "storage")
        /// The request did not reach the server, or no answer came back.
        public static let transport = Code(rawValue: "transport")
        /// The server answered with a status that is not success (``HeraldDeviceError/status``).
        public static let rejected = Code(rawValue: "rejected")
        /// The configuration's header provider threw: the app's own credentials were not at hand.
        public static let headers = Code(rawValue: "headers")

        /// The code's name.
        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// The HTTP status the server answered with, for ``Code/rejected``.
    public var status: Int?
    /// What exactly was wrong, for people and logs.
    public var detail: String?

    /// An error with its code, and optionally the server's status and a detail.
    public init(_ code: Code, status: Int? = nil, detail: String? = nil) {
        self.code = code
        self.status = status
        self.detail = detail
    }

    /// A clicked action's identifier is empty or longer than 64 bytes.
    public static let invalidAction = HeraldDeviceError(.invalidAction)
    /// A push token is empty, or an activity's identifier or type is empty.
    public static let invalidToken = HeraldDeviceError(.invalidToken)

    /// The code, the status when there is one, and the detail.
    public var description: String {
        var text = "HeraldDeviceError.\(code)"
        if let status { text += " (HTTP \(status))" }
        if let detail { text += ": \(detail)" }
        return text
    }
}
