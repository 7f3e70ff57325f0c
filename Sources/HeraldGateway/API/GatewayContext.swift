import Hummingbird
import NIOCore

/// What a request carries through the gateway's middleware to its route.
public struct GatewayContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The API key the request presented, once ``AuthenticationMiddleware`` accepted it.
    public var apiKey: APIKey?

    /// The client's address as a number for rate limits, never kept beyond them: an IPv4
    /// address, or an IPv6 address's /64 (one subscriber's), hashed with this process's seed.
    public var peer: Int?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress.flatMap(Self.peer)
    }

    static func peer(_ address: SocketAddress) -> Int? {
        var hasher = Hasher()
        switch address {
        case .v4(let v4):
            hasher.combine(4)
            hasher.combine(v4.address.sin_addr.s_addr)
        case .v6(let v6):
            hasher.combine(6)
            withUnsafeBytes(of: v6.address.sin6_addr) { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0.prefix(8))) }
        default:
            return nil
        }
        return hasher.finalize()
    }
}
