import HeraldCore

extension WebPushSubscription {
    /// Which endpoints Herald sends to. A subscription comes from a browser, and a backend passes
    /// it on unread: an endpoint at `https://169.254.169.254/…` or `https://10.0.0.5/…` would
    /// have the gateway send requests into its operator's own network (server-side request
    /// forgery). So an endpoint's host must be a known browser push service or one the app
    /// allows, and an address on a private network is refused, both when the subscription is
    /// read and when a connection is opened (the name may resolve elsewhere by then: DNS
    /// rebinding), unless ``allowsPrivateAddresses``.
    public struct Policy: Sendable, Hashable {
        /// Accept `http:` endpoints on a loopback host (127.0.0.1, ::1, localhost), and connect
        /// to loopback addresses: for tests against a mock without TLS. Never needed for real browsers.
        public var allowsLoopbackHTTP: Bool
        /// Hosts accepted beside ``knownPushServices``: a name (`push.example.net`), every name
        /// under a domain (`.example.net` or `*.example.net`), or an IP address. For push
        /// services of your own, such as a UnifiedPush distributor (a self-hosted ntfy).
        public var allowedHosts: [String]
        /// Accept endpoints at, and connect to, loopback, private, shared, link-local and other
        /// non-public addresses. For tests against a mock on 127.0.0.1, or a push service on the
        /// operator's own network; off by default.
        public var allowsPrivateAddresses: Bool

        public init(allowsLoopbackHTTP: Bool = false, allowedHosts: [String] = [], allowsPrivateAddresses: Bool = false) {
            self.allowsLoopbackHTTP = allowsLoopbackHTTP
            self.allowedHosts = allowedHosts
            self.allowsPrivateAddresses = allowsPrivateAddresses
        }

        /// `https:` to the known push services only.
        public static let standard = Policy()

        /// The browsers' push services, by host: Apple's (`web.push.apple.com`; Apple's "Sending
        /// web push notifications in web apps and browsers" asks servers to allow
        /// `*.push.apple.com`), Google's FCM for Chrome, Edge on Android, Opera, Samsung Internet
        /// (`fcm.googleapis.com`, and `android.googleapis.com` for older subscriptions),
        /// Mozilla's autopush (`updates.push.services.mozilla.com`) and Microsoft's WNS for Edge
        /// on Windows (`*.notify.windows.com`). A leading dot: every name under it.
        public static let knownPushServices = [".push.apple.com", "fcm.googleapis.com", "android.googleapis.com", ".push.services.mozilla.com", ".notify.windows.com"]

        /// Why an endpoint at `host` is refused, naming the host; `nil`: it may be sent to.
        public func refusal(host: String) -> String? {
            let name = Self.normalized(host)
            let shown = PeerText(host, limit: 100)
            if let address = IPAddress(name) {
                if let kind = address.restrictedKind {
                    if allows(kind: kind) { return nil }
                    return "\(shown) is a \(kind) address, not a push service on the internet (allowPrivateAddresses lets tests reach one)"
                }
                if Self.matches(name, allowedHosts) { return nil }
                return "\(shown) is an IP address, not a known push service; add it to the app's webPush.allowedHosts if it is one"
            }
            if Self.isLoopback(host: name) {
                if allows(kind: "loopback") { return nil }
                return "\(shown) is a loopback name, not a push service on the internet (allowPrivateAddresses lets tests reach one)"
            }
            if Self.matches(name, Self.knownPushServices) || Self.matches(name, allowedHosts) { return nil }
            return "\(shown) is not a known push service (Apple's, Google's, Mozilla's or Microsoft's); add it to the app's webPush.allowedHosts if it is one (a UnifiedPush distributor)"
        }

        /// Why a connection for `host` to `address` (what it resolved to) is refused; `nil`: it may be opened.
        public func refusal(connectingTo address: IPAddress, for host: String) -> String? {
            guard let kind = address.restrictedKind, !allows(kind: kind) else { return nil }
            return "\(PeerText(host, limit: 100)) resolved to \(address), a \(kind) address: not connected (allowPrivateAddresses lets tests reach one)"
        }

        private func allows(kind: String) -> Bool {
            allowsPrivateAddresses || (allowsLoopbackHTTP && kind == "loopback")
        }

        static func isLoopback(host: String) -> Bool {
            let name = normalized(host)
            if let address = IPAddress(name) { return address.restrictedKind == "loopback" }
            return name == "localhost" || name.hasSuffix(".localhost")
        }

        /// Lower case, without IPv6 brackets or a trailing dot (`example.com.` is `example.com`).
        private static func normalized(_ host: String) -> String {
            var name = Substring(host.lowercased())
            if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
            while name.hasSuffix(".") { name = name.dropLast() }
            return String(name)
        }

        private static func matches(_ name: String, _ entries: [String]) -> Bool {
            entries.contains { entry in
                var entry = normalized(entry)
                if entry.hasPrefix("*.") { entry.removeFirst() }
                if entry.hasPrefix(".") { return name.hasSuffix(entry) && name.count > entry.count }
                if let address = IPAddress(entry), let other = IPAddress(name) { return address == other }
                return name == entry
            }
        }
    }
}
