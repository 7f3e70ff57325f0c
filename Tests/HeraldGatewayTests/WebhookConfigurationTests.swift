import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Testing

/// `webhooks` and `webhookSender` in the configuration file: what is accepted, and for what is
/// not, the file, the field and the problem, never the secret.
@Suite("Webhook configuration")
struct WebhookConfigurationTests {
    static let secret = "whsec-\(UUID().uuidString)"
    static let environment = ["HOOK_SECRET": secret, "EMPTY_SECRET": ""]

    /// A configuration file whose app has `webhooks` (JSON), and `extra` top-level members.
    static func file(_ scratch: ScratchDirectory, webhooks: String, extra: String = "") throws -> String {
        _ = try scratch.write("AuthKey_ABC123DEFG.p8", ProviderKey.generate().pemRepresentation)
        let key = APIKey.generate(name: "backend", apps: ["shop"]).entry
        return try scratch.write(
            "herald.json",
            """
            { "listen": "127.0.0.1:9090", "database": "sqlite:herald.db",\(extra)
              "apps": [ { "id": "shop", "topic": "com.example.shop", "environment": "sandbox",
                          "authKey": { "file": "AuthKey_ABC123DEFG.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ" },
                          "webhooks": \(webhooks) } ],
              "apiKeys": [ { "name": "backend", "sha256": "\(key.sha256Hex)", "apps": ["shop"] } ] }
            """
        )
    }

    @Test("webhooks: https and http URLs, the secret from the environment, all events unless listed, 24 h to give up unless set")
    func valid() throws {
        let scratch = try ScratchDirectory()
        let file = try Self.file(
            scratch,
            webhooks: """
                [ { "url": "https://hooks.example.com/herald", "secretEnv": "HOOK_SECRET" },
                  { "url": "http://10.0.0.5:8080/in", "secretEnv": "HOOK_SECRET", "events": ["device.retired"], "giveUpAfterSeconds": 600 } ]
                """,
            extra: #" "webhookSender": {"retryInitialSeconds": 2, "retryMaximumSeconds": 30, "timeoutSeconds": 5, "maximumPendingPerApp": 5000},"#
        )
        let configuration = try GatewayConfiguration.load(file: file, environment: Self.environment)
        let hooks = configuration.apps[0].webhooks
        #expect(hooks.map(\.url) == ["https://hooks.example.com/herald", "http://10.0.0.5:8080/in"])
        #expect(hooks[0].secret.bytes == Array(Self.secret.utf8) && hooks[0].events == WebhookEventType.byDefault)
        #expect(hooks[0].giveUpAfter == .seconds(86_400) && hooks[1].giveUpAfter == .seconds(600) && hooks[1].events == [.deviceRetired])
        #expect(configuration.webhookSender.initialRetryDelay == .seconds(2) && configuration.webhookSender.timeout == .seconds(5))
        let interest = configuration.webhookInterest
        #expect(interest.maximumPending == 5000, "the outbox's bound reaches the store with the hooks")
        #expect(interest.hooks(app: "shop", event: .deviceRetired) == ["https://hooks.example.com/herald", "http://10.0.0.5:8080/in"])
        #expect(interest.hooks(app: "shop", event: .deliveryFailed) == ["https://hooks.example.com/herald"])
        #expect(interest.hooks(app: "other", event: .deliveryFailed).isEmpty)
        #expect(!"\(hooks[0])".contains(Self.secret), "a webhook's description hides its secret")
    }

    @Test("a bad webhook is refused naming the file, the field and the problem, never the secret", arguments: [
        (#"[{"url": "ftp://hooks.example.com/x", "secretEnv": "HOOK_SECRET"}]"#, "apps[0].webhooks[0].url", "https:// or http://"),
        (#"[{"url": "https:///nohost", "secretEnv": "HOOK_SECRET"}]"#, "apps[0].webhooks[0].url", "with a host"),
        (#"[{"url": "hooks.example.com", "secretEnv": "HOOK_SECRET"}]"#, "apps[0].webhooks[0].url", "https:// or http://"),
        (#"[{"url": "https://hooks.example.com/x"}]"#, "apps[0].webhooks[0].secretEnv", "is required"),
        (#"[{"url": "https://hooks.example.com/x", "secretEnv": "NOT_SET_ANYWHERE"}]"#, "apps[0].webhooks[0].secretEnv", "NOT_SET_ANYWHERE is not set"),
        (#"[{"url": "https://hooks.example.com/x", "secretEnv": "EMPTY_SECRET"}]"#, "apps[0].webhooks[0].secretEnv", "is empty"),
        (#"[{"url": "https://hooks.example.com/x", "secretEnv": "HOOK_SECRET", "events": ["notification.sent"]}]"#, "apps[0].webhooks[0].events[0]", "unknown event 'notification.sent'"),
        (#"[{"url": "https://hooks.example.com/x", "secretEnv": "HOOK_SECRET", "events": []}]"#, "apps[0].webhooks[0].events", "at least one event"),
        (#"[{"url": "https://hooks.example.com/x", "secretEnv": "HOOK_SECRET", "giveUpAfterSeconds": 0}]"#, "apps[0].webhooks[0].giveUpAfterSeconds", "must be 1 to"),
        (#"[{"url": "https://hooks.example.com/x", "secretEnv": "HOOK_SECRET", "secret": "inline"}]"#, "apps[0].webhooks[0].secret", "the configuration file never does: give secretEnv"),
        (
            #"[{"url": "https://hooks.example.com/x", "secretEnv": "HOOK_SECRET"}, {"url": "https://hooks.example.com/x", "secretEnv": "HOOK_SECRET"}]"#,
            "apps[0].webhooks[1].url", "given twice"
        ),
        (#"{"url": "https://hooks.example.com/x"}"#, "apps[0].webhooks", "array of objects"),
    ])
    func refused(webhooks: String, field: String, words: String) throws {
        let scratch = try ScratchDirectory()
        let file = try Self.file(scratch, webhooks: webhooks)
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration.load(file: file, environment: Self.environment) }
        #expect(error?.file == file)
        #expect(error?.field == field, "\(error?.description ?? "")")
        #expect(error?.message.contains(words) == true, "\(error?.description ?? ""): should say '\(words)'")
        #expect(error?.description.contains(Self.secret) == false)
    }

    @Test("webhookSender: its fields are bounded", arguments: [
        (#"{"timeoutSeconds": 0}"#, "webhookSender.timeoutSeconds", "must be 1 to 120"),
        (#"{"maximumPendingPerApp": 0}"#, "webhookSender.maximumPendingPerApp", "must be 1 to 100000000"),
        (#"{"maximumPendingPerApp": 100000001}"#, "webhookSender.maximumPendingPerApp", "must be 1 to 100000000"),
    ])
    func senderBounds(sender: String, field: String, message: String) throws {
        let scratch = try ScratchDirectory()
        let file = try Self.file(scratch, webhooks: "[]", extra: #" "webhookSender": "# + sender + ",")
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration.load(file: file, environment: Self.environment) }
        #expect(error?.field == field && error?.message.contains(message) == true, "\(error?.description ?? "")")
    }
}
