import HeraldGateway
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `herald doctor`'s check that the API's address is free: it binds it as `herald serve` would
/// (SO_REUSEADDR on) and closes it at once.
enum DoctorListen {
    static func check(_ address: ListenAddress) async -> DoctorCheck {
        let name = "listen \(address)"
        if address.port == 0 { return .ok(name, "port 0: herald serve picks a free port and prints it") }
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .bind(host: address.host, port: address.port)
                .get()
            try await channel.close()
            return .ok(name, "free")
        } catch let error as IOError {
            switch error.errnoCode {
            case EADDRINUSE:
                return .error(name, "in use by another process: stop what holds it or pick another with --listen (or listen in the file)")
            case EACCES:
                return .error(name, "not allowed (ports below 1024 need privileges): pick a port above 1023 with --listen, or grant CAP_NET_BIND_SERVICE")
            case EADDRNOTAVAIL:
                return .error(name, "\(address.host) is not an address of this machine: pick one it has (0.0.0.0 for all) with --listen")
            default:
                return .error(name, "cannot bind (\(error)): pick another address with --listen")
            }
        } catch {
            return .error(name, "cannot bind (\(error)): check the host name, or pick another address with --listen")
        }
    }
}
