import HeraldCore
import Testing

@Suite("IP addresses: parsed as a resolver reads them, and classed as public or not")
struct IPAddressTests {
    @Test("dotted, inet_aton's short, octal and hex forms, IPv6 with :: and an IPv4 tail; names are not addresses")
    func parses() {
        #expect(IPAddress("10.1.2.3")?.bytes == [10, 1, 2, 3])
        #expect(IPAddress("2130706433")?.bytes == [127, 0, 0, 1])
        #expect(IPAddress("0x7f.1")?.bytes == [127, 0, 0, 1])
        #expect(IPAddress("0177.0.0.1")?.bytes == [127, 0, 0, 1])
        #expect(IPAddress("127.1")?.bytes == [127, 0, 0, 1])
        #expect(IPAddress("[::1]")?.bytes == [UInt8](repeating: 0, count: 15) + [1])
        #expect(IPAddress("::ffff:169.254.169.254")?.embeddedIPv4?.bytes == [169, 254, 169, 254])
        #expect(IPAddress("fe80::1%eth0")?.bytes.prefix(2) == [0xFE, 0x80])
        #expect(IPAddress("2001:db8:0:0:0:0:0:1")?.description == "2001:db8:0:0:0:0:0:1")
        for name in ["example.com", "fcm.googleapis.com", "256.1.1.1", "1.2.3.4.5", "1::2::3", "12345::", "", "0x", "::ffff:1.2.3"] {
            #expect(IPAddress(name) == nil || name == "0x", "\(name)")
        }
    }

    @Test("the special-purpose ranges are not public; global unicast is", arguments: [
        ("0.1.2.3", "unspecified"), ("10.0.0.1", "private"), ("100.64.0.1", "shared"), ("100.127.255.255", "shared"), ("127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local"), ("172.16.0.1", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
        ("192.0.0.8", "reserved"), ("192.0.2.1", "documentation"), ("198.18.0.1", "benchmarking"), ("224.0.0.251", "multicast"),
        ("255.255.255.255", "reserved"), ("::", "unspecified"), ("::1", "loopback"), ("fc00::1", "unique local"), ("fe80::1", "link-local"),
        ("ff02::1", "multicast"), ("::ffff:10.0.0.1", "private"), ("64:ff9b::7f00:1", "loopback"), ("2002:c0a8:101::1", "private"),
        ("2001:db8::1", "documentation"), ("::10.0.0.1", "private"),
    ])
    func restricted(text: String, kind: String) throws {
        #expect(try #require(IPAddress(text)).restrictedKind == kind)
    }

    @Test("public addresses", arguments: ["8.8.8.8", "17.188.180.1", "100.63.255.255", "100.128.0.1", "172.32.0.1", "2a00:1450:4001:82f::200a", "::ffff:8.8.8.8"])
    func isPublic(text: String) throws {
        #expect(try #require(IPAddress(text)).restrictedKind == nil)
    }
}
