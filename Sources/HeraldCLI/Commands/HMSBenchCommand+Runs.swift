import HeraldFCM
import HeraldFCMMock
import HeraldHMS
import HeraldHMSMock

extension HMSBenchCommand {
    typealias Figures = FCMBenchCommand.Figures

    /// Push token `index`: 130 characters of Push Kit's alphabet, about an Android one's length.
    static func pushToken(_ index: Int) -> String {
        let head = "bench-\(index):IQAAAACy0"
        return head + String(repeating: "kqA-Rf_3", count: 17).dropFirst(head.count - 6)
    }

    /// The Android (v1) notification every run sends, to `tokens`: FCM's title and body.
    static func message(to tokens: [String]) -> HMSAndroidMessage {
        HMSAndroidMessage(tokens: tokens, notification: HMSAndroidMessage.Notification(title: FCMBenchCommand.title, body: FCMBenchCommand.body))
    }

    /// The Push Kit client for the mock: its app credentials (the Android API), no retries.
    private func configuration(for server: MockHMSServer) -> HMSClient.Configuration {
        var configuration = HMSClient.Configuration(app: server.appCredentials)
        configuration.endpoint = server.origin
        configuration.additionalTrustRoots = [server.certificateAuthority]
        configuration.maximumConnections = connections
        configuration.maximumInFlight = concurrency
        configuration.retry = .none
        return configuration
    }

    /// Herald's Push Kit client: `count` messages of one token each over `tokens` push tokens,
    /// in groups of `concurrency` (`send(_:toEach:)`, as the FCM run).
    func sendHMS(to server: MockHMSServer) async throws -> Figures {
        let pushTokens = (0..<tokens).map(Self.pushToken)
        let message = Self.message(to: [pushTokens[0]])
        return try await Figures.measure {
            let sent = try await withHMSClient(configuration: configuration(for: server)) { client in
                await GroupedSending.run(count: count, width: concurrency) { part in
                    await client.send(message, toEach: part.map { pushTokens[$0 % pushTokens.count] })
                }
            }
            return Figures(count: count, accepted: sent.accepted, failed: sent.failed, firstFailure: sent.failures.first)
        }
    }

    /// Herald's Push Kit client again: `count` tokens in requests of `batch` distinct tokens,
    /// `concurrency` requests in flight. Figures count tokens.
    func sendHMSBatched(to server: MockHMSServer) async throws -> Figures {
        let pushTokens = (0..<tokens).map(Self.pushToken)
        let sizes = stride(from: 0, to: count, by: batch).map { min(batch, count - $0) }
        return try await Figures.measure {
            let sent = try await withHMSClient(configuration: configuration(for: server)) { client in
                await GroupedSending.run(count: sizes.count, width: concurrency) { part in
                    await withTaskGroup(of: [Result<Void, HMSSendError>].self) { group in
                        for request in part {
                            let message = Self.message(to: (0..<sizes[request]).map { pushTokens[(request * batch + $0) % pushTokens.count] })
                            group.addTask { await Self.send(message, with: client) }
                        }
                        var results: [Result<Void, HMSSendError>] = []
                        for await each in group { results += each }
                        return results
                    }
                }
            }
            return Figures(count: count, accepted: sent.accepted, failed: sent.failed, firstFailure: sent.failures.first)
        }
    }

    /// One batched request's tokens, each accepted or not: Push Kit's partial success names
    /// those that failed. (A function, not the child task's closure, so the typed throw is
    /// caught here: see FCMClient's `retrying`.)
    private static func send(_ message: HMSAndroidMessage, with client: HMSClient) async -> [Result<Void, HMSSendError>] {
        do throws(HMSSendError) {
            let receipt = try await client.send(message)
            let failed = min(message.tokens.count, receipt.failureCount)
            let refusal = HMSSendError(.rejected, reason: "\(failed) of \(message.tokens.count) tokens failed", attempts: receipt.attempts)
            return Array(repeating: .success(()), count: message.tokens.count - failed) + Array(repeating: .failure(refusal), count: failed)
        } catch {
            return Array(repeating: .failure(error), count: message.tokens.count)
        }
    }

    /// Herald's FCM client to the mock FCM: `count` messages over `tokens` registration tokens,
    /// in groups of `concurrency`, as `herald bench fcm` sends them.
    func sendFCM(to server: MockFCMServer) async throws -> Figures {
        var configuration = FCMClient.Configuration(serviceAccount: server.serviceAccount)
        configuration.endpoint = server.origin
        configuration.additionalTrustRoots = [server.certificateAuthority]
        configuration.maximumConnections = connections
        configuration.maximumInFlight = concurrency
        configuration.retry = .none
        let message = FCMMessage(
            token: FCMBenchCommand.registrationToken(0), notification: FCMMessage.Notification(title: FCMBenchCommand.title, body: FCMBenchCommand.body))
        let registrationTokens = (0..<tokens).map(FCMBenchCommand.registrationToken)
        return try await Figures.measure {
            let sent = try await withFCMClient(configuration: configuration) { client in
                await GroupedSending.run(count: count, width: concurrency) { part in
                    await client.send(message, toEach: part.map { registrationTokens[$0 % registrationTokens.count] })
                }
            }
            return Figures(count: count, accepted: sent.accepted, failed: sent.failed, firstFailure: sent.failures.first)
        }
    }
}
