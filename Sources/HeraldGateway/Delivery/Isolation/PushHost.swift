import HeraldCore

/// How a push service's host is named in its circuit's key, the log and `/metrics`' neighbour,
/// the same way for every platform: `host:port`, the host lower-cased, the port always written.
enum PushHost {
    /// An APNs host.
    static func name(_ environment: APNSEnvironment) -> String {
        "\(environment.host.lowercased()):\(environment.port)"
    }

    /// The host of an `https://` or `http://` URL (a push service's endpoint, a configured
    /// origin), with its port (the scheme's when the URL gives none); `nil` for anything else.
    /// Only the authority is read: no user information, path or query is kept.
    static func name(ofURL url: some StringProtocol) -> String? {
        let bytes = url.utf8
        let https = url.prefix(8).lowercased() == "https://"
        guard https || url.prefix(7).lowercased() == "http://" else { return nil }
        var authority = url.dropFirst(https ? 8 : 7)
        if let end = authority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { authority = authority[..<end] }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard !authority.isEmpty, bytes.count <= 4096 else { return nil }
        // A port is what follows the last colon after any IPv6 literal's closing bracket.
        let afterLiteral = authority.lastIndex(of: "]").map { authority.index(after: $0) } ?? authority.startIndex
        if let colon = authority[afterLiteral...].lastIndex(of: ":") {
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy(\.isASCIIDigit) else { return nil }
            return "\(authority[..<colon].lowercased()):\(port)"
        }
        return "\(authority.lowercased()):\(https ? 443 : 80)"
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
