/// A host and port of the binary interface: a gateway or a feedback service.
public struct LegacyEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (`[::1]:PORT` for IPv6).
    ///
    /// - Throws: ``LegacyError`` with code ``LegacyError/Code/invalidEndpoint``, saying what is wrong.
    public init(parsing text: String) throws(LegacyError) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw LegacyError(.invalidEndpoint, "'\(text)' is not HOST:PORT; write IPv6 addresses as [::1]:2195")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw LegacyError(.invalidEndpoint, "'\(text)' is not HOST:PORT, e.g. gateway.push.apple.com:2195")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), (1...65_535).contains(port) else {
            throw LegacyError(.invalidEndpoint, "'\(text)': the port must be a number from 1 to 65535")
        }
        guard !host.isEmpty else { throw LegacyError(.invalidEndpoint, "'\(text)' has no host") }
        self.init(host: String(host), port: port)
    }

    /// Apple's production gateway, `gateway.push.apple.com:2195` (apns-spec §1.1; retired 2021).
    public static let productionGateway = LegacyEndpoint(host: "gateway.push.apple.com", port: 2195)
    /// Apple's sandbox gateway, `gateway.sandbox.push.apple.com:2195`.
    public static let sandboxGateway = LegacyEndpoint(host: "gateway.sandbox.push.apple.com", port: 2195)
    /// Apple's production feedback service, `feedback.push.apple.com:2196`.
    public static let productionFeedback = LegacyEndpoint(host: "feedback.push.apple.com", port: 2196)
    /// Apple's sandbox feedback service, `feedback.sandbox.push.apple.com:2196`.
    public static let sandboxFeedback = LegacyEndpoint(host: "feedback.sandbox.push.apple.com", port: 2196)

    /// `HOST:PORT`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
