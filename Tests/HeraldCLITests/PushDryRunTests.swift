import Foundation
import HeraldTestSupport
import HeraldCore
import Testing

@Suite("herald push --dry-run, end to end")
struct PushDryRunTests {
    static let token1 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    static let token2 = String(repeating: "fe", count: 32)

    let files: ScratchDirectory
    let keyPath: String
    let key: ProviderKey

    init() throws {
        files = try ScratchDirectory()
        key = ProviderKey.generate(keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        keyPath = try files.write("AuthKey_ABC123DEFG.p8", key.pemRepresentation)
    }

    var credentials: [String] { ["--auth-key", keyPath, "--key-id", "ABC123DEFG", "--team-id", "DEF123GHIJ"] }

    func jsonLines(_ result: HeraldProcess.Result) throws -> [JSONValue] {
        try result.stdoutLines.map { try JSONValue(parsing: $0) }
    }

    @Test("json output: one object per token with method, path, headers, payload and a redacted JWT")
    func jsonOutput() async throws {
        let result = try await HeraldProcess.run([
            "push", Self.token1, Self.token2.uppercased(), "--sandbox", "--topic", "com.example.app",
            "--title", "Order shipped", "--body", "Arrives Tuesday", "--badge", "0", "--sound", "default",
            "--category", "ORDER", "--thread-id", "orders", "--mutable-content", "--interruption-level", "time-sensitive",
            "--relevance-score", "0.5", "--custom", #"order={"id":42}"#, "--custom", "note=\"hi\"",
            "--collapse-id", "order-42", "--expiration", "1800000000", "--dry-run", "--output", "json",
        ] + credentials)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        let lines = try jsonLines(result)
        try #require(lines.count == 2)
        #expect(lines.map { $0["token"] } == [.string(Self.token1), .string(Self.token2)])
        let first = lines[0]
        #expect(first["method"] == "POST")
        #expect(first["path"] == .string("/3/device/" + Self.token1))
        let headers = try #require(first["headers"]?.objectValue)
        #expect(headers["apns-topic"] == "com.example.app")
        #expect(headers["apns-push-type"] == "alert")
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-expiration"] == "1800000000")
        #expect(headers["apns-collapse-id"] == "order-42")
        #expect(headers["apns-id"] == nil)
        #expect(first["payload"] == [
            "aps": [
                "alert": ["title": "Order shipped", "body": "Arrives Tuesday"], "badge": 0, "sound": "default",
                "category": "ORDER", "thread-id": "orders", "mutable-content": 1,
                "interruption-level": "time-sensitive", "relevance-score": 0.5,
            ],
            "order": ["id": 42], "note": "hi",
        ])

        // The authorization header is there, with header and claims readable and the signature hidden.
        let authorization = try #require(headers["authorization"]?.stringValue)
        #expect(authorization.hasPrefix("bearer "))
        let parts = authorization.dropFirst("bearer ".count).split(separator: ".")
        #expect(parts.count == 3)
        #expect(parts[2] == "<redacted>")
        let claims = try JSONValue(parsing: Self.base64URL(parts[1]))
        #expect(claims["iss"] == "DEF123GHIJ")
        #expect(claims["iat"]?.intValue != nil)
        #expect(try JSONValue(parsing: Self.base64URL(parts[0])) == ["alg": "ES256", "kid": "ABC123DEFG"])
        #expect(!result.stdout.contains(String(key.pemRepresentation.split(separator: "\n")[1])))
    }

    static func base64URL(_ text: Substring) -> [UInt8] {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Array(Data(base64Encoded: base64) ?? Data())
    }

    @Test("text output shows the request line, authority, headers and body")
    func textOutput() async throws {
        let result = try await HeraldProcess.run(["push", Self.token1, "--production", "--topic", "com.example.app", "--alert", "Hello", "--dry-run"] + credentials)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdoutLines
        #expect(lines.first == "POST /3/device/" + Self.token1)
        #expect(lines.contains(":authority: api.push.apple.com:443"))
        #expect(lines.contains("apns-push-type: alert"))
        #expect(lines.contains { $0.hasPrefix("authorization: bearer ") && $0.hasSuffix(".<redacted>") })
        #expect(lines.last == #"{"aps":{"alert":"Hello"}}"#)
        #expect(result.stdout.hasSuffix("}\n"))
    }

    @Test("without credentials the dry run shows no authorization header")
    func noCredentials() async throws {
        let result = try await HeraldProcess.run(["push", Self.token1, "--host", "https://127.0.0.1:8443", "--topic", "com.x", "--alert", "a", "--dry-run", "--output", "json"])
        #expect(result.status == 0)
        let line = try #require(try jsonLines(result).first)
        #expect(line["authority"] == "127.0.0.1:8443")
        #expect(line["headers"]?["authorization"] == nil)
    }

    @Test("a content-available-only payload defaults to push type background and priority 5")
    func backgroundDefault() async throws {
        let result = try await HeraldProcess.run(["push", Self.token1, "--sandbox", "--topic", "com.x", "--content-available", "--custom", "sync=true", "--dry-run", "--output", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(try jsonLines(result).first)
        #expect(line["headers"]?["apns-push-type"] == "background")
        #expect(line["headers"]?["apns-priority"] == "5")
        #expect(line["payload"] == ["aps": ["content-available": 1], "sync": true])
    }

    @Test("tokens from a file and from stdin: blank lines and # comments skipped")
    func tokenFiles() async throws {
        let file = try files.write("tokens.txt", "# my devices\n\n\(Self.token1)\n  \(Self.token2)  \n# end\n")
        let fromFile = try await HeraldProcess.run(["push", "--tokens-file", file, "aabb", "--sandbox", "--topic", "com.x", "--alert", "a", "--dry-run", "--output", "json"])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        #expect(try jsonLines(fromFile).map { $0["token"] } == ["aabb", .string(Self.token1), .string(Self.token2)])

        let fromStdin = try await HeraldProcess.run(["push", "--tokens-file", "-", "--sandbox", "--topic", "com.x", "--alert", "a", "--dry-run", "--output", "json"], stdin: "\(Self.token2)\n#x\n\(Self.token1)")
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        #expect(try jsonLines(fromStdin).map { $0["token"] } == [.string(Self.token2), .string(Self.token1)])
    }

    @Test("a raw payload file passes through unchanged (compacted onto one line in json output)")
    func rawPayload() async throws {
        let raw = "{\n  \"zeta\": [1, 2.50],\n  \"aps\": { \"alert\": \"Hi \\\"you\\\"\" }\n}\n"
        let file = try files.write("payload.json", raw)
        let json = try await HeraldProcess.run(["push", Self.token1, "--payload", file, "--sandbox", "--topic", "com.x", "--dry-run", "--output", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.contains(#""payload":{"zeta":[1,2.50],"aps":{"alert":"Hi \"you\""}}}"#))
        let text = try await HeraldProcess.run(["push", Self.token1, "--payload", "-", "--sandbox", "--topic", "com.x", "--dry-run"], stdin: raw)
        #expect(text.status == 0)
        #expect(text.stdout.hasSuffix("\n\n" + raw))
        let notObject = try await HeraldProcess.run(["push", Self.token1, "--payload", "-", "--sandbox", "--topic", "com.x", "--dry-run"], stdin: "[1]")
        #expect(notObject.status == 2)
        #expect(notObject.stderr.contains("must be a JSON object"))
    }

    @Test("a bad token is reported on one line and the other tokens are still printed; exit 2")
    func badTokenAmongGood() async throws {
        let result = try await HeraldProcess.run(["push", Self.token1, "12x4", Self.token2, "abc", "--sandbox", "--topic", "com.x", "--alert", "a", "--dry-run", "--output", "json"])
        #expect(result.status == 2)
        #expect(try jsonLines(result).map { $0["token"] } == [.string(Self.token1), .string(Self.token2)])
        #expect(result.stderrLines == [
            "herald: argument 2: BadDeviceToken: device token has 'x' at position 3; only hex digits 0-9 and a-f are allowed",
            "herald: argument 4: BadDeviceToken: device token has an odd number of hex digits (3); each byte takes two",
        ])
    }

    @Test("usage and configuration errors: one clear line on stderr, exit 2", arguments: [
        (["--topic", "com.x", "--alert", "a"], "say where to send: --sandbox, --production or --host"),
        (["--sandbox", "--production", "--topic", "com.x", "--alert", "a"], "exclude each other"),
        (["--host", "http://x:1", "--topic", "com.x", "--alert", "a"], "--host: host must be an https:// URL"),
        (["--sandbox", "--alert", "a"], "--topic is required"),
        (["--sandbox", "--topic", "com.x"], "no payload"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--title", "t"], "not both"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--payload", "/dev/null"], "cannot be combined"),
        (["--sandbox", "--topic", "com.x", "--payload", "/nonexistent/p.json"], "cannot read payload file '/nonexistent/p.json': No such file or directory"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--custom", "aps={}"], "'aps' cannot be a custom key"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--custom", "k=nojson"], "--custom k: the value is not JSON"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--custom", "novalue"], "--custom takes KEY=JSON"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--badge=-1"], "--badge must be 0 or more"),
        (["--sandbox", "--topic", "com.x", "--content-available", "--priority", "10"], "BadPriority: background pushes must have priority 5"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--push-type", "voip"], "BadTopic: push type voip needs a topic ending in '.voip'"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--push-type", "nope"], "push-type"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--priority", "7"], "priority"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--collapse-id", String(repeating: "c", count: 65)], "BadCollapseId: apns-collapse-id is 65 bytes; APNs allows at most 64"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--apns-id", "nope"], "BadMessageId"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--expiration=-5"], "BadExpirationDate"),
        (["--sandbox", "--topic", "com.x", "--alert", String(repeating: "a", count: 4100)], "PayloadTooLarge: payload is 4120 bytes; the limit is 4096"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--auth-key", "/nonexistent/k.p8", "--key-id", "K", "--team-id", "T"], "cannot read auth key file '/nonexistent/k.p8': No such file or directory"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--auth-key", "/dev/null"], "missing --key-id, --team-id"),
        (["--sandbox", "--topic", "com.x", "--alert", "a", "--bogus"], "Unknown option '--bogus'"),
    ])
    func usageErrors(arguments: [String], message: String) async throws {
        let result = try await HeraldProcess.run(["push", Self.token1, "--dry-run"] + arguments)
        #expect(result.status == 2)
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("herald: "))
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test("a key that is not a P-256 .p8 is refused naming what it is")
    func wrongKey() async throws {
        let p384 = try files.write("p384.p8", "-----BEGIN EC PRIVATE KEY-----\nMAA=\n-----END EC PRIVATE KEY-----\n")
        let result = try await HeraldProcess.run(["push", Self.token1, "--sandbox", "--topic", "com.x", "--alert", "a", "--dry-run", "--auth-key", p384, "--key-id", "K", "--team-id", "T"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("SEC1"))
    }

    @Test("no tokens at all is a usage error; --apns-id with two tokens too")
    func tokenCounts() async throws {
        let none = try await HeraldProcess.run(["push", "--sandbox", "--topic", "com.x", "--alert", "a", "--dry-run"])
        #expect(none.status == 2)
        #expect(none.stderr.contains("no device tokens"))
        let id = "123e4567-e89b-12d3-a456-426614174000"
        let one = try await HeraldProcess.run(["push", Self.token1, "--sandbox", "--topic", "com.x", "--alert", "a", "--apns-id", id.uppercased(), "--dry-run", "--output", "json"])
        #expect(one.status == 0)
        #expect(try jsonLines(one).first?["headers"]?["apns-id"] == .string(id))
        let two = try await HeraldProcess.run(["push", Self.token1, Self.token2, "--sandbox", "--topic", "com.x", "--alert", "a", "--apns-id", id, "--dry-run"])
        #expect(two.status == 2)
        #expect(two.stderr.contains("--apns-id names one notification"))
    }

    @Test("--help exits 0 and lists the options")
    func help() async throws {
        let result = try await HeraldProcess.run(["push", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("--dry-run"))
        #expect(result.stdout.contains("--tokens-file"))
    }
}
