#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// Why a listener could not open, in words that say what to do: NIO's own description
/// (`bind(descriptor:ptr:bytes:): Address already in use (errno: 98)`) names a system call.
enum ListenFailure {
    static func describe(_ error: any Error) -> String {
        guard let error = error as? IOError else { return "\(error)" }
        switch error.errnoCode {
        case EADDRINUSE: return "the address is already in use: stop what listens there, or pick another port (0 picks a free one)"
        case EACCES: return "permission denied: ports below 1024 need privileges; pick a port from 1024 up"
        case EADDRNOTAVAIL: return "no network interface of this machine has that address"
        default: return "\(error)"
        }
    }
}
