import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

/// What a hostile or careless caller sends, thrown at every field of every route on both
/// databases: each answer is a 4xx that names the field (never a 500, never a crash), and what
/// is refused is not stored.
@Suite("Hostile input", .timeLimit(.minutes(6)))
struct HostileInputTests {
    /// Values that are wrong for any field that wants a string, a number or an array: each is a
    /// JSON text to put where the field's value goes.
    static let edgeValues: [String] = [
        #""""#, #"" ""#, "null", "true", "0", "-1", "-9223372036854775808", "9223372036854775807", "9223372036854775808",
        "1e300", "-1e300", "0.5", "1e-300", "9.3e15", "[]", "{}", #"["x"]"#, #"{"a": 1}"#,
        #""\u0000""#, #""a\r\nb""#, #""\u001b[31m""#, #""\ud83d\ude00""#, #""\u202e""#,
        "\"" + String(repeating: "x", count: 70_000) + "\"",
        String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
        String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
    ]

    /// Texts that are not JSON, or not JSON this API takes, sent as whole bodies.
    static let edgeBodies: [String] = [
        "NaN", "Infinity", "-Infinity", #"{"badge": NaN}"#, #"{"badge": Infinity}"#, "[", "{", #"{"user": "a",}"#,
        #"{"user": "a", "user": "b"}"#, "[]", "1", #""x""#, "\u{FEFF}{}",
        String(repeating: "[", count: 100_000),
    ]

    @Test("every field of PUT devices/{token}, POST devices and POST notifications: an edge value is a 4xx naming the field, never a 500",
          arguments: Backend.allCases)
    func fieldEdges(backend: Backend) async throws {
        try await RouterHarness.run(backend: backend) { api in
            let device = "/v1/apps/\(appID)/devices/\(token(1))"
            let notifications = "/v1/apps/\(appID)/notifications"
            let deviceFields = ["user", "tags", "badge", "kind", "activityType", "environment", "timeZone"]
            let notificationTemplate: [(String, String)] = [
                ("to", #"{"tokens": ["\#(token(1))"]}"#), ("payload", #"{"aps": {"alert": "x"}}"#), ("pushType", #""alert""#),
                ("priority", "10"), ("expiration", "1900000000"), ("collapseID", #""c""#), ("badge", #""increment""#),
                ("idempotencyKey", #""k""#), ("sendAt", #""2026-01-01T00:00:00Z""#), ("sendAtLocalTime", #""09:00""#), ("respectQuietHours", "false"),
                ("ratePerSecond", "100"),
            ]
            var tried = 0
            for value in Self.edgeValues {
                for field in deviceFields {
                    let answer = try await api.call(.put, device, body: "{\"\(field)\": \(value)}")
                    tried += 1
                    if answer.status >= 400 {
                        #expect(answer.status < 500)
                        let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                        #expect(message.contains(field) || message.contains("not valid JSON") || answer.status == 413, "PUT \(field)=\(value.prefix(40)): \(message)")
                    }
                    let line = try await api.call(.post, "/v1/apps/\(appID)/devices", body: "{\"token\": \"\(token(2))\", \"\(field)\": \(value)}\n", contentType: "application/x-ndjson")
                    tried += 1
                    #expect(line.status == 200 || line.status == 413)
                }
                for (field, _) in notificationTemplate {
                    let members = notificationTemplate.map { name, good in "\"\(name)\": \(name == field ? value : good)" }
                    let answer = try await api.call(.post, notifications, body: "{" + members.joined(separator: ", ") + "}")
                    tried += 1
                    if answer.status >= 400 {
                        let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                        #expect(message.contains(field) || message.contains("not valid JSON") || answer.status == 413, "POST \(field)=\(value.prefix(40)): \(message)")
                    }
                }
            }
            for body in Self.edgeBodies {
                #expect((400..<500).contains(try await api.call(.put, device, body: body).status), "PUT \(body.prefix(40))")
                #expect((400..<500).contains(try await api.call(.post, notifications, body: body).status), "POST \(body.prefix(40))")
                tried += 2
            }
            #expect(tried == Self.edgeValues.count * (deviceFields.count * 2 + notificationTemplate.count) + Self.edgeBodies.count * 2, "requests tried")
            // Nothing refused was stored: device 1 exists only if some edge value was a valid
            // registration, and never with a NUL or a control character in it.
            let listed = try await api.call(.get, "/v1/apps/\(appID)/devices?limit=1000")
            guard case .array(let devices) = listed.json?["devices"] ?? .null else { Issue.record("no device list"); return }
            for stored in devices {
                let user = stored["user"]?.stringValue ?? ""
                #expect(PeerTextCheck.isPrintable(user), "stored user \(user.debugDescription)")
            }
        }
    }

    @Test("expiration: past year 9999 is a 400 naming the field and its range (it overflowed the store and killed the process)",
          arguments: Backend.allCases)
    func expirationRange(backend: Backend) async throws {
        try await RouterHarness.run(backend: backend) { api in
            let path = "/v1/apps/\(appID)/notifications"
            for value in ["9300000000000000", "253402300800", "9223372036854775807", "-1"] {
                let answer = try await api.call(.post, path, body: #"{"to": {"all": true}, "payload": {"aps": {}}, "expiration": \#(value)}"#)
                #expect(answer.status == 400, "\(value)")
                #expect(answer.json?["error"]?["code"]?.stringValue == "BadExpirationDate", "\(value)")
                #expect(answer.json?["error"]?["message"]?.stringValue?.hasPrefix("expiration: ") == true, "\(value)")
                #expect(answer.json?["error"]?["message"]?.stringValue?.contains("0 to 253402300799") == true, "\(value)")
            }
            // A number past what JSON's integers carry exactly is not an integer at all.
            for value in ["9.3e15", "1e300", "0.5"] {
                let answer = try await api.call(.post, path, body: #"{"to": {"all": true}, "payload": {"aps": {}}, "expiration": \#(value)}"#)
                #expect(answer.status == 400 && answer.json?["error"]?["message"]?.stringValue == "expiration: must be an integer", "\(value)")
            }
            let latest = try await api.call(.post, path, body: #"{"to": {"all": true}, "payload": {"aps": {}}, "expiration": 253402300799}"#)
            #expect(latest.status == 202)
            // The process is still up and the store still answers.
            #expect(try await api.call(.get, "/readyz", key: .some(nil)).status == 200)
        }
    }

    @Test("strings that become header values or SQL parameters: CR LF, NUL and other controls are a 400 on both databases",
          arguments: Backend.allCases)
    func controlCharacters(backend: Backend) async throws {
        try await RouterHarness.run(backend: backend) { api in
            let notifications = "/v1/apps/\(appID)/notifications"
            let refused: [(body: String, field: String)] = [
                (#"{"to": {"all": true}, "payload": {"aps": {}}, "collapseID": "a\r\nb"}"#, "collapseID: apns-collapse-id holds a control character"),
                (#"{"to": {"all": true}, "payload": {"aps": {}}, "collapseID": "a\u0000"}"#, "collapseID"),
                (#"{"to": {"all": true}, "payload": {"aps": {"alert": "a\u0000"}}}"#, "payload.aps.alert"),
                (#"{"to": {"users": ["u\u0000"]}, "payload": {"aps": {}}}"#, "to.users[0]"),
                (#"{"to": {"all": true}, "payload": {"aps": {}, "k\u0000": 1}}"#, "payload"),
                (#"{"to": {"all": true}, "payload": {"aps": {}}, "idempotencyKey": "a\u0000"}"#, "idempotencyKey"),
            ]
            for (body, field) in refused {
                let answer = try await api.call(.post, notifications, body: body)
                #expect(answer.status == 400, "\(body)")
                #expect(answer.json?["error"]?["message"]?.stringValue?.contains(field) == true, "\(body): \(String(describing: answer.json))")
            }
            #expect(try await api.call(.put, "/v1/apps/\(appID)/devices/\(token(3))", body: #"{"user": "a\u0000b"}"#).status == 400)
            let queries = [
                "/v1/apps/\(appID)/devices?user=%00", "/v1/apps/\(appID)/devices?user=a%0D%0Ab", "/v1/apps/\(appID)/devices?tag=%00",
                "/v1/apps/\(appID)/devices?cursor=%00", "/v1/apps/\(appID)/devices?status=%00", "/v1/apps/\(appID)/devices/%00",
                "/v1/apps/%00/devices", "/v1/notifications/%00", "/v1/apps/\(appID)/devices?user=%FF%FE", "/v1/apps/\(appID)/devices?user=%zz",
                "/v1/apps/\(appID)/devices?limit=%00",
            ]
            for query in queries {
                #expect(try await api.call(.get, query).status == 400, "\(query)")
            }
            #expect(try await api.call(.delete, "/v1/notifications/%00").status == 400)
            // Nothing was queued or registered by any of it.
            #expect(try await api.call(.get, "/v1/apps/\(appID)/devices").json?["devices"] == [])
        }
    }

    @Test("numbers in query strings: limit out of 1...1000 or not a number is a 400 naming it", arguments: [
        "0", "-1", "1001", "99999999999999999999", "1e3", "abc", "", "1.5", "+5", " 5",
    ])
    func queryNumbers(limit: String) async throws {
        try await RouterHarness.run { api in
            let answer = try await api.call(.get, "/v1/apps/\(appID)/devices?limit=\(limit.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
            #expect(answer.status == 400)
            #expect(answer.json?["error"]?["message"]?.stringValue?.contains("limit") == true)
        }
    }

    @Test("device tokens past DeviceToken.maximumByteCount are refused on every route and import line", arguments: Backend.allCases)
    func longTokens(backend: Backend) async throws {
        try await RouterHarness.run(backend: backend) { api in
            let long = String(repeating: "a", count: 10_000)
            let justOver = String(repeating: "ab", count: DeviceToken.maximumByteCount + 1)
            let longest = String(repeating: "ab", count: DeviceToken.maximumByteCount)
            for token in [long, justOver] {
                let path = "/v1/apps/\(appID)/devices/\(token)"
                let put = try await api.call(.put, path, body: "")
                #expect(put.status == 400)
                #expect(put.json?["error"]?["message"]?.stringValue?.contains("at most 200 hex digits") == true)
                #expect(try await api.call(.get, path).status == 400)
                #expect(try await api.call(.delete, path).status == 400)
                let notification = try await api.call(.post, "/v1/apps/\(appID)/notifications", body: #"{"to": {"tokens": ["\#(token)"]}, "payload": {"aps": {}}}"#)
                #expect(notification.status == 400)
                #expect(notification.json?["error"]?["message"]?.stringValue?.contains("to.tokens[0]") == true)
                let imported = try await api.call(.post, "/v1/apps/\(appID)/devices", body: #"{"token": "\#(token)"}"# + "\n", contentType: "application/x-ndjson")
                #expect(imported.json?.count("upserted") == 0 && imported.json?.count("errorCount") == 1)
            }
            #expect(try await api.call(.put, "/v1/apps/\(appID)/devices/\(longest)", body: "").status == 201)
        }
    }
}

/// Whether stored text is printable (no controls, no NUL), as every accepted string must be.
enum PeerTextCheck {
    static func isPrintable(_ text: String) -> Bool {
        !text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }
}
