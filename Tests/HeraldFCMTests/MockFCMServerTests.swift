import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldFCM
import HeraldFCMMock
import HeraldTestSupport
import NIOCore
import NIOSSL
import Testing

/// The mock FCM as a peer: its token endpoint and `messages:send` over HTTP/1.1, to a plain
/// HTTP client and to Google's own Python SDK.
@Suite("Mock FCM", .timeLimit(.minutes(6)))
struct MockFCMServerTests {
    static let token = "mock-device:APA91b" + String(repeating: "q", count: 60)

    /// A plain HTTP/1.1 client (async-http-client) trusting the mock's CA.
    static func withHTTP<Result: Sendable>(_ server: MockFCMServer, _ body: (HTTPClient) async throws -> Result) async throws -> Result {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates([server.certificateAuthority])]
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .http1Only
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func post(_ client: HTTPClient, _ url: String, body: String, contentType: String, bearer: String? = nil) async throws -> (status: Int, json: JSONValue?) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: contentType)
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer " + bearer) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await client.execute(request, timeout: .seconds(20))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), try? JSONValue(parsing: bytes.readableBytesView))
    }

    static func tokenForm(_ assertion: String, grant: String = "urn:ietf:params:oauth:grant-type:jwt-bearer") -> String {
        "grant_type=" + grant.replacingOccurrences(of: ":", with: "%3A") + "&assertion=" + assertion
    }

    @Test("the token endpoint takes the file's token URI and Google's as aud, firebase.messaging and cloud-platform; refuses others with invalid_grant")
    func tokenEndpoint() async throws {
        var configuration = MockFCMServer.Configuration()
        configuration.accessTokenLifetime = .seconds(120)
        try await withMockFCMServer(configuration: configuration) { server in
            try await Self.withHTTP(server) { http in
                let account = server.serviceAccount
                let uri = account.tokenURI
                let good = try await Self.post(http, uri, body: Self.tokenForm(try FCMAssertion.sign(for: account)), contentType: "application/x-www-form-urlencoded")
                #expect(good.status == 200 && good.json?["expires_in"] == 120 && good.json?["token_type"] == "Bearer")
                #expect(good.json?["access_token"]?.stringValue?.isEmpty == false)

                var google = account
                google.tokenURI = FCMServiceAccount.googleTokenURI
                let cloud = try FCMAssertion.sign(for: google, scope: FCMAssertion.cloudPlatformScope + " https://www.googleapis.com/auth/userinfo.email")
                #expect(try await Self.post(http, uri, body: Self.tokenForm(cloud), contentType: "application/x-www-form-urlencoded").status == 200)

                var elsewhere = account
                elsewhere.tokenURI = "https://example.com/token"
                let refusals = [
                    Self.tokenForm(try FCMAssertion.sign(for: elsewhere)),
                    Self.tokenForm(try FCMAssertion.sign(for: account, scope: "https://www.googleapis.com/auth/userinfo.email")),
                    Self.tokenForm(try FCMAssertion.sign(for: account, now: Date().addingTimeInterval(-7200))),
                    Self.tokenForm(try FCMAssertion.sign(for: try TestAccount.make(tokenURI: uri))),
                    Self.tokenForm("not.a.jwt"),
                ]
                for form in refusals {
                    let answer = try await Self.post(http, uri, body: form, contentType: "application/x-www-form-urlencoded")
                    #expect(answer.status == 400 && answer.json?["error"] == "invalid_grant", "\(answer.json?["error_description"]?.stringValue ?? "")")
                }
                let grant = try await Self.post(http, uri, body: Self.tokenForm("x", grant: "client_credentials"), contentType: "application/x-www-form-urlencoded")
                #expect(grant.json?["error"] == "unsupported_grant_type")
                #expect(server.tokenRequestCount == 8 && server.accessTokensIssued == 2)
            }
        }
    }

    @Test("messages:send over HTTP/1.1: the bearer token, the project and the message's shape are checked, answered in Google's error JSON")
    func sendChecks() async throws {
        try await withMockFCMServer { server in
            try await Self.withHTTP(server) { http in
                let access = try #require(
                    try await Self.post(
                        http, server.serviceAccount.tokenURI, body: Self.tokenForm(try FCMAssertion.sign(for: server.serviceAccount)),
                        contentType: "application/x-www-form-urlencoded"
                    ).json?["access_token"]?.stringValue)
                let url = server.origin + "/v1/projects/herald-mock/messages:send"
                func send(_ body: String, bearer: String? = access, url: String = url) async throws -> (status: Int, json: JSONValue?) {
                    try await Self.post(http, url, body: body, contentType: "application/json", bearer: bearer)
                }
                let good = #"{"message":{"token":"\#(Self.token)","data":{"a":"b"}}}"#
                let accepted = try await send(good)
                #expect(accepted.status == 200 && accepted.json?["name"] == "projects/herald-mock/messages/1")
                #expect(server.received.first?.httpVersion == 1 && server.received.first?.data == ["a": "b"])

                #expect(try await send(good, bearer: nil).json?["error"]?["status"] == "UNAUTHENTICATED")
                #expect(try await send(good, bearer: "ya29.forged").status == 401)
                // What it does not serve: 404 with Google's error shape, naming what it does.
                let elsewhere = try await send(good, url: server.origin + "/v1/other")
                #expect(elsewhere.status == 404 && elsewhere.json?["error"]?["status"] == "NOT_FOUND")
                #expect(elsewhere.json?["error"]?["message"]?.stringValue?.contains("messages:send") == true)
                let otherProject = try await send(good, url: server.origin + "/v1/projects/someone-else/messages:send")
                #expect(otherProject.status == 403 && otherProject.json?["error"]?["status"] == "PERMISSION_DENIED")

                let badToken = try await send(#"{"message":{"token":"has space"}}"#)
                #expect(badToken.status == 400)
                #expect(badToken.json?["error"]?["details"] == [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"]])
                let number = try await send(#"{"message":{"token":"\#(Self.token)","data":{"n":1}}}"#)
                #expect(number.status == 400)
                #expect(number.json?["error"]?["details"]?.jsonString.contains("google.rpc.BadRequest") == true)
                #expect(number.json?["error"]?["details"]?.jsonString.contains("FcmError") == false, "about the message, not the token")
                let reserved = try await send(#"{"message":{"token":"\#(Self.token)","data":{"from":"x"}}}"#)
                #expect(reserved.status == 400 && reserved.json?["error"]?["message"]?.stringValue?.contains("from") == true)
                #expect(try await send("[]").status == 400)
                #expect(server.receivedCount == 1)
            }
        }
    }

    @Test("firebase-admin (Google's Python SDK) sends through the mock: its token exchange, messages:send and UNREGISTERED")
    func firebaseAdmin() async throws {
        try await PythonPeers.require(.firebaseAdmin)
        try await withMockFCMServer { server in
            server.unregister("gone-device:APA91b")
            let scratch = try ScratchDirectory()
            let caFile = try scratch.write("ca.pem", server.certificateAuthorityPEM)
            let accountFile = try scratch.write("sa.json", server.serviceAccountJSON)
            let script = """
                import os, sys
                ca, account, origin, token = sys.argv[1:5]
                os.environ['REQUESTS_CA_BUNDLE'] = ca
                os.environ['SSL_CERT_FILE'] = ca
                os.environ['NO_PROXY'] = '127.0.0.1,localhost'
                for name in ('HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'all_proxy'):
                    os.environ.pop(name, None)
                import firebase_admin
                from firebase_admin import credentials, messaging
                app = firebase_admin.initialize_app(credentials.Certificate(account))
                service = messaging._get_messaging_service(app)
                service._fcm_url = origin + '/v1/projects/herald-mock/messages:send'
                message = messaging.Message(token=token, notification=messaging.Notification(title='From Python', body='firebase-admin'),
                                            data={'k': 'v'}, android=messaging.AndroidConfig(priority='high', ttl=3.5, collapse_key='score'))
                print(messaging.send(message, app=app))
                try:
                    messaging.send(messaging.Message(token='gone-device:APA91b'), app=app)
                    print('gone accepted')
                except messaging.UnregisteredError:
                    print('unregistered')
                # send_each_async: httpx over HTTP/2 (what the benchmark will compare with).
                import asyncio
                batch = [messaging.Message(token=token, data={'i': str(i)}) for i in range(3)]
                print(asyncio.run(messaging.send_each_async(batch, dry_run=False, app=app)).success_count)
                """
            let output = try await runCommand("python3", ["-c", script, caFile, accountFile, server.origin, Self.token])
            #expect(output.standardOutput == "projects/herald-mock/messages/1\nunregistered\n3\n", "\(output.all)")
            let received = try #require(server.received.first)
            #expect(received.title == "From Python" && received.data == ["k": "v"])
            #expect(received.message["android"]?["ttl"] == "3.500000000s" || received.message["android"]?["ttl"] == "3.5s")
            #expect(received.httpVersion == 1, "requests: HTTP/1.1")
            #expect(server.received.filter { $0.data["i"] != nil }.map(\.httpVersion) == [2, 2, 2], "httpx: HTTP/2")
            #expect(server.tokenRequestCount <= 2, "one token per client (the sync and the async one may each fetch)")
        }
    }

}
