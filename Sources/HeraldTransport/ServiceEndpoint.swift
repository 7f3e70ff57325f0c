#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An `https:` URL a platform's client talks to (FCM's or Push Kit's origin, an OAuth token URI),
/// or `http:` to a loopback address only (a mock on this machine): nothing is sent in clear over a
/// network.
package struct ServiceEndpoint: Sendable, Hashable {
    package var isHTTPS: Bool
    package var host: String
    package var port: Int
    /// The path, `/` when the URL has none.
    package var path: String
    /// The URL as given.
    package var url: String

    package init?(_ text: String) {
        guard text.utf8.count <= 2048, let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
            url.user == nil, url.password == nil, url.query == nil, url.fragment == nil
        else { return nil }
        switch scheme {
        case "https": isHTTPS = true
        case "http" where Self.isLoopback(host): isHTTPS = false
        default: return nil
        }
        let port = url.port ?? (isHTTPS ? 443 : 80)
        guard (1...65535).contains(port) else { return nil }
        self.host = host
        self.port = port
        self.path = url.path.isEmpty ? "/" : url.path
        self.url = text
    }

    /// The path without a trailing `/` (empty for the root), to put an API's path after.
    package var base: String {
        path == "/" ? "" : String(path.reversed().drop(while: { $0 == "/" }).reversed())
    }

    private static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}
