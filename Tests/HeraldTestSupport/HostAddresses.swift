import Foundation

/// What a name resolves to, by the system's resolver (getaddrinfo), as address texts.
public enum HostAddresses {
    public static func of(_ name: String) async -> [String] {
        await onOwnThread {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(name, nil, &hints, &list) == 0 else { return [] }
            defer { freeaddrinfo(list) }
            var texts: [String] = []
            var entry = list
            while let current = entry {
                var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                if getnameinfo(current.pointee.ai_addr, current.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 {
                    texts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                }
                entry = current.pointee.ai_next
            }
            return texts
        }
    }
}
