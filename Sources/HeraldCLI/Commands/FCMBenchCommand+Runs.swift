import Foundation
import HeraldAPNS
import HeraldCore
import HeraldFCM
import HeraldAPNSMock

extension FCMBenchCommand {
    /// The alert both clients send, about 100 bytes like `herald bench client`'s.
    static let title = "Herald benchmark"
    static let body = "A short alert body of about one hundred bytes."

    /// Registration token `index`: 152 characters, the length of a real one.
    static func registrationToken(_ index: Int) -> String {
        let head = "bench-\(index):APA91b"
        return head + String(repeating: "Hq3_-zK8", count: 19).dropFirst(head.count)
    }

    /// One side's run: what was accepted, in how long, with how much of the process's CPU.
    struct Figures {
        var count: Int
        var accepted = 0
        var failed = 0
        var firstFailure: String?
        var seconds = 0.0
        var cpuSeconds = 0.0

        var rate: Double { seconds > 0 ? Double(accepted) / seconds : 0 }

        /// This rate ÷ `other`'s (0 when `other` sent nothing).
        func ratio(to other: Figures) -> Double { other.rate > 0 ? rate / other.rate : 0 }
        var cpuMicrosPerMessage: Double { cpuSeconds / Double(count) * 1e6 }

        /// Runs `body`, timing it and the process's CPU time.
        static func measure(_ body: () async throws -> Figures) async rethrows -> Figures {
            let before = ProcessStats.now()
            let clock = ContinuousClock()
            let started = clock.now
            var figures = try await body()
            figures.seconds = (clock.now - started).seconds
            figures.cpuSeconds = ProcessStats.now().cpuSeconds - before.cpuSeconds
            return figures
        }

        /// `accepted N; R UNIT/s in S s; cpu C µs per message`, and the first failure.
        func summary(unit: String, mockIncluded: Bool) -> String {
            "accepted \(accepted)\(failed > 0 ? ", failed \(failed)" : ""); \(Int(rate)) \(unit)/s in \(format(seconds)) s; "
                + "cpu \(format(cpuMicrosPerMessage)) µs per message\(mockIncluded ? " (the in-process mock's included)" : "")"
                + (firstFailure.map { "; first failure: \($0)" } ?? "")
        }

        func write(into writer: inout JSONWriter) {
            var object: [String: JSONValue] = [
                "accepted": .int(accepted), "failed": .int(failed), "seconds": .double(seconds), "rate": .double(rate.rounded()),
                "cpu_us_per_message": .double(cpuMicrosPerMessage),
            ]
            if let firstFailure { object["first_failure"] = .string(firstFailure) }
            writer.value(.object(object))
        }
    }

    /// Herald's FCM client: `count` messages over `tokens` registration tokens, in groups of
    /// `concurrency` (`send(_:toEach:)`).
    func sendFCM(to target: Target) async throws -> Figures {
        var configuration = FCMClient.Configuration(serviceAccount: target.account)
        configuration.endpoint = target.sink ?? target.origin
        configuration.additionalTrustRoots = target.trust
        configuration.maximumConnections = connections
        configuration.maximumInFlight = concurrency
        configuration.retry = .none
        let message = FCMMessage(token: Self.registrationToken(0), notification: FCMMessage.Notification(title: Self.title, body: Self.body))
        let registrationTokens = (0..<tokens).map(Self.registrationToken)
        return try await Figures.measure {
            let sent = try await withFCMClient(configuration: configuration) { client in
                await GroupedSending.run(count: count, width: concurrency) { part in
                    await client.send(message, toEach: part.map { registrationTokens[$0 % registrationTokens.count] })
                }
            }
            return Figures(count: count, accepted: sent.accepted, failed: sent.failed, firstFailure: sent.failures.first)
        }
    }

    /// Herald's APNs client: `count` notifications to the mock APNs in this process, its records
    /// off and its streams per connection the mock FCM's.
    func sendAPNs() async throws -> Figures {
        let key = ProviderKey.generate()
        var mock = MockAPNSServer.Configuration()
        mock.recordLimit = 0
        mock.maximumConcurrentStreams = Self.streamsPerConnection
        mock.registerProviderKey(key.publicKey, keyID: key.keyID, teamID: key.teamID)
        let payload = try Payload(aps: APS(alert: .text(Self.title + ": " + Self.body))).encode()
        let headers = PushHeaders(pushType: .alert, topic: "com.example.herald")
        let deviceTokens = try (0..<tokens).map { i in try DeviceToken(bytes: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i &* 13) }) }
        let notifications = GeneratedSequence(count: count) { PushNotification(token: deviceTokens[$0 % deviceTokens.count], headers: headers, payload: payload) }
        return try await withMockAPNSServer(configuration: mock) { server in
            var configuration = APNSClient.Configuration(environment: server.environment, credentials: .providerToken(key))
            configuration.trustRoots = .only(server.trustRoots)
            configuration.pool.maximumConnections = connections
            configuration.pool.maximumInFlight = concurrency
            configuration.retry = .none
            return try await Figures.measure {
                var tally = OutcomeTally()
                var firstFailure: String?
                try await withAPNSClient(configuration: configuration) { client in
                    for try await outcome in client.send(contentsOf: notifications) {
                        tally.add(outcome)
                        if firstFailure == nil, tally.accepted < tally.total { firstFailure = "\(outcome.result)" }
                    }
                }
                return Figures(count: count, accepted: tally.accepted, failed: tally.total - tally.accepted, firstFailure: firstFailure)
            }
        }
    }

    /// firebase-admin's run: `firebaseAdminCount` messages with `messaging.send_each_async` (httpx
    /// over HTTP/2; at most 500 a call), its FCM URL pointed at the mock and the mock's CA trusted,
    /// timed in Python (and its CPU time, Python's process's) after one message that fetches its
    /// access token and opens its connection.
    func sendFirebaseAdmin(to target: Target, scratch: URL) async throws -> Figures {
        let script = """
            import os, sys, time, asyncio, warnings
            warnings.simplefilter('ignore', DeprecationWarning)  # Message.token, in firebase-admin 7
            ca, account, url, count, tokens = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
            os.environ['SSL_CERT_FILE'] = ca
            os.environ['REQUESTS_CA_BUNDLE'] = ca
            os.environ['NO_PROXY'] = '127.0.0.1,localhost'
            for name in ('HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'all_proxy'):
                os.environ.pop(name, None)
            import firebase_admin
            from firebase_admin import credentials, messaging
            app = firebase_admin.initialize_app(credentials.Certificate(account))
            messaging._get_messaging_service(app)._fcm_url = url
            def token(i):
                head = 'bench-%d:APA91b' % i
                return head + ('Hq3_-zK8' * 19)[len(head):]
            notification = messaging.Notification(title=sys.argv[6], body=sys.argv[7])
            messages = [messaging.Message(token=token(i % tokens), notification=notification) for i in range(count)]
            async def main():
                await messaging.send_each_async(messages[:1], dry_run=False, app=app)
                start, cpu = time.monotonic(), time.process_time()
                accepted = 0
                for first in range(0, count, 500):
                    accepted += (await messaging.send_each_async(messages[first:first + 500], dry_run=False, app=app)).success_count
                return accepted, time.monotonic() - start, time.process_time() - cpu
            print(*asyncio.run(main()))
            """
        let url = target.origin + "/v1/projects/\(target.account.projectID)/messages:send"
        let printed = try await PythonPeer.run(
            script,
            arguments: [target.caFile, target.accountFile, url, String(firebaseAdminCount), String(tokens), Self.title, Self.body],
            timeout: .seconds(max(120, firebaseAdminCount / 10)), scratch: scratch,
            hint: "is firebase-admin installed (with httpx[http2])? python3 -m pip install firebase-admin 'httpx[http2]'")
        let fields = printed.split(separator: " ")
        guard fields.count == 3, let accepted = Int(fields[0]), let seconds = Double(fields[1]), seconds > 0, let cpu = Double(fields[2]) else {
            throw CommandFailure("firebase-admin printed no result: \(PeerText(printed, limit: 200))")
        }
        return Figures(count: firebaseAdminCount, accepted: accepted, failed: firebaseAdminCount - accepted, seconds: seconds, cpuSeconds: cpu)
    }
}
