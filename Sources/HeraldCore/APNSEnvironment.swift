/// Where notifications go: Apple's production or sandbox (development) servers, or any host and
/// port (a mock, a gateway). There is no default: the caller always says which (apns-spec §1.1).
public struct APNSEnvironment: Sendable, Hashable, CustomStringConvertible {
    /// Which kind of server this is.
    public enum Kind: Sendable, Hashable {
        case production
        case sandbox
        case custom
    }

    public var kind: Kind
    /// The host name or IP address.
    public var host: String
    /// The TCP port.
    public var port: Int

    /// `api.push.apple.com:443`.
    public static let production = APNSEnvironment(kind: .production, host: "api.push.apple.com", port: 443)
    /// `api.sandbox.push.apple.com:443`, the development environment.
    public static let sandbox = APNSEnvironment(kind: .sandbox, host: "api.sandbox.push.apple.com", port: 443)
    /// Port 2197, which APNs also serves for firewalls that block other HTTPS (§1.1).
    public static let alternatePort = 2197

    /// Any host and port, such as Herald's mock server or a private gateway.
    public static func custom(host: String, port: Int) -> APNSEnvironment {
        APNSEnvironment(kind: .custom, host: host, port: port)
    }

    /// The same environment on another port (e.g. ``alternatePort``).
    public func onPort(_ port: Int) -> APNSEnvironment {
        APNSEnvironment(kind: kind, host: host, port: port)
    }

    /// Parses `https://HOST[:PORT]` (IPv6 hosts in brackets; port 443 when absent) into a custom
    /// environment, or production/sandbox when it names Apple's hosts on 443.
    public init(url: String) throws(EnvironmentError) {
        let prefix = "https://"
        guard url.lowercased().hasPrefix(prefix) else {
            throw EnvironmentError("host must be an https:// URL like https://127.0.0.1:2197, got '\(url)'")
        }
        var rest = Substring(url.dropFirst(prefix.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/") else {
            throw EnvironmentError("host URL must be https://HOST[:PORT] with no path, got '\(url)'")
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw EnvironmentError("unclosed '[' in host URL '\(url)'") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw EnvironmentError("unexpected text after ']' in host URL '\(url)'") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        var port = 443
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw EnvironmentError("port in host URL must be 1-65535, got '\(portText)'")
            }
            port = number
        }
        guard !host.isEmpty else { throw EnvironmentError("host URL '\(url)' has no host") }
        let name = String(host).lowercased()
        switch (name, port) {
        case (Self.production.host, 443): self = .production
        case (Self.sandbox.host, 443): self = .sandbox
        default: self = .custom(host: String(host), port: port)
        }
    }

    private init(kind: Kind, host: String, port: Int) {
        self.kind = kind
        self.host = host
        self.port = port
    }

    /// `host:port` as in `:authority`, with IPv6 addresses in brackets.
    public var authority: String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    public var description: String {
        switch kind {
        case .production: "production (\(authority))"
        case .sandbox: "sandbox (\(authority))"
        case .custom: authority
        }
    }
}

/// A host URL that cannot be used.
public struct EnvironmentError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
