import HeraldCore
import HeraldHMS
import HeraldStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Huawei devices: each push token read from the store, sent through the app's Push Kit client
/// by API (Android's v1, HarmonyOS NEXT's v3), up to Push Kit's 1,000 tokens a request, the
/// requests at once up to the client's in-flight bound.
struct HMSDelivery: PlatformDelivery {
    /// The app's client; `nil` when the app has no `hms` (any more).
    let client: AppClient<HMSClient>?

    /// One request: the part's indices of its devices and their tokens, in the same order.
    struct Request: Sendable {
        let api: HMSAddress.API
        let indices: [Int]
        let tokens: [String]
    }

    /// Push Kit's endpoint (Huawei's, or the app's `hms.endpoint`), for every device of either API.
    func hosts(of part: DeliveryPart) async -> PartHosts {
        PartHosts(host: client == nil ? nil : part.app.hms.flatMap { PushHost.name(ofURL: $0.endpoint) })
    }

    func send(_ part: DeliveryPart) async {
        guard let client else {
            part.recordEach(.failed(reason: .hms(.notConfigured)))
            return
        }
        await client.send(part, platform: "Push Kit") { await send(part, through: $0) }
    }

    private func send(_ part: DeliveryPart, through client: HMSClient) async {
        let items = part.items
        let addresses: [String: HMSAddress]
        do {
            addresses = try await part.store.addresses(HMSAddress.self, app: part.app.id, tokens: items.map(\.token))
        } catch {
            part.logger.warning("cannot read the batch's Push Kit tokens; retrying later", metadata: ["error": "\(error)"])
            part.recordEach(.retry(reason: .gateway(.connectionFailed)))
            return
        }
        let now = Date()
        var byAPI: [HMSAddress.API: (indices: [Int], tokens: [String])] = [:]
        for (index, item) in items.enumerated() {
            // Deleted since the claim: nothing to send to.
            guard let address = addresses[item.token] else {
                part.record(.rejected(reason: .hms(.invalidToken), timestamp: now), at: index)
                continue
            }
            byAPI[address.api, default: ([], [])].indices.append(index)
            byAPI[address.api, default: ([], [])].tokens.append(address.pushToken)
        }
        let requests = Self.requests(byAPI)
        let notification = part.batch.notification
        // Each API's message once for the part, if it has devices of that API.
        let android: JSONValue? = byAPI[.android] == nil ? nil : HuaweiMessages.androidMessage(for: notification, now: now)
        let harmony: (pushType: HMSHarmonyMessage.PushType, body: JSONValue)? =
            byAPI[.harmony] == nil ? nil : HuaweiMessages.harmonyMessage(for: notification, now: now)
        await withTaskGroup(of: (Request, Result<HMSReceipt, HMSSendError>).self) { group in
            for request in requests {
                group.addTask {
                    do throws(HMSSendError) {
                        switch request.api {
                        case .android:
                            let message: HMSAndroidMessage
                            do throws(HMSError) {
                                message = try HuaweiMessages.androidMessage(android ?? .null, tokens: request.tokens)
                            } catch {
                                throw HMSSendError(.invalidRequest, reason: error.message, attempts: 0)
                            }
                            return (request, .success(try await client.send(message)))
                        case .harmony:
                            let message: HMSHarmonyMessage
                            do throws(HMSError) {
                                message = try HuaweiMessages.harmonyMessage(harmony?.body ?? .null, pushType: harmony?.pushType ?? .alert, tokens: request.tokens)
                            } catch {
                                throw HMSSendError(.invalidRequest, reason: error.message, attempts: 0)
                            }
                            return (request, .success(try await client.send(message)))
                        }
                    } catch {
                        return (request, .failure(error))
                    }
                }
            }
            for await (request, result) in group {
                if case .failure(let error) = result, error.code == .invalidRequest {
                    part.logger.warning("the notification makes no valid Push Kit message", metadata: ["api": "\(request.api.rawValue)", "error": "\(error.reason)"])
                }
                let answered = Date()
                for (index, outcome) in zip(request.indices, HuaweiMessages.outcomes(result, tokens: request.tokens, now: answered)) {
                    part.record(outcome, at: index)
                }
            }
        }
    }

    /// The requests for each API's devices: at most Push Kit's 1,000 tokens each.
    static func requests(_ byAPI: [HMSAddress.API: (indices: [Int], tokens: [String])]) -> [Request] {
        var requests: [Request] = []
        for api in HMSAddress.API.allCases {
            guard let devices = byAPI[api] else { continue }
            for start in stride(from: 0, to: devices.tokens.count, by: HMSPushToken.maximumPerRequest) {
                let end = min(start + HMSPushToken.maximumPerRequest, devices.tokens.count)
                requests.append(Request(api: api, indices: Array(devices.indices[start..<end]), tokens: Array(devices.tokens[start..<end])))
            }
        }
        return requests
    }
}
