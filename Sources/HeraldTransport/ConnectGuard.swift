import NIOCore
import NIOPosix

/// Decides, from the address a name resolved to, whether a connection may be opened: `nil`
/// lets it, a text refuses it and says why. Checked after resolution and before the connect
/// call, so a refused address gets no packet (a Web Push endpoint's name that resolves into the
/// operator's own network: DNS rebinding).
package typealias ConnectGuard = @Sendable (_ host: String, _ address: SocketAddress) -> String?

/// A connection the guard refused: no packet was sent to its address.
package struct ConnectionNotAllowed: Error, CustomStringConvertible {
    package var reason: String
    package var description: String { reason }

    /// The refusal inside a connect's error: the bootstrap's own, or one of the attempts Happy
    /// Eyeballs made (every address was refused).
    package static func find(in error: any Error) -> ConnectionNotAllowed? {
        if let refused = error as? ConnectionNotAllowed { return refused }
        if let attempts = error as? NIOConnectionError {
            for attempt in attempts.connectionErrors {
                if let refused = attempt.error as? ConnectionNotAllowed { return refused }
            }
        }
        return nil
    }
}

/// The first handler of a connection's pipeline: it sees the `connect` with the resolved
/// address (for each address Happy Eyeballs tries) and fails it when the guard refuses.
package final class ConnectGuardHandler: ChannelOutboundHandler, RemovableChannelHandler {
    package typealias OutboundIn = NIOAny
    private let check: ConnectGuard
    private let host: String

    package init(host: String, _ check: @escaping ConnectGuard) {
        self.host = host
        self.check = check
    }

    package func connect(context: ChannelHandlerContext, to address: SocketAddress, promise: EventLoopPromise<Void>?) {
        if let refusal = check(host, address) {
            promise?.fail(ConnectionNotAllowed(reason: refusal))
            context.close(promise: nil)
            return
        }
        context.connect(to: address, promise: promise)
    }
}

extension SocketAddress {
    /// The address's IP bytes (4 or 16); `nil` for a Unix socket.
    package var ipBytes: [UInt8]? {
        switch self {
        case .v4(let address):
            return withUnsafeBytes(of: address.address.sin_addr.s_addr) { Array($0) }
        case .v6(let address):
            return withUnsafeBytes(of: address.address.sin6_addr) { Array($0) }
        case .unixDomainSocket:
            return nil
        }
    }
}

/// Whether a host is written as an IP address (no SNI is sent for one, RFC 6066 §3); an IPv6
/// literal with or without its brackets.
package enum IPAddressText {
    package static func isAddress(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return (try? SocketAddress(ipAddress: bare, port: 0)) != nil
    }
}
