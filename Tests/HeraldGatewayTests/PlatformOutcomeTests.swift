import Foundation
import HeraldAPNS
import HeraldCore
import HeraldFCM
import HeraldHMS
import HeraldWebPush
import Logging
import Synchronization
import HeraldTestSupport
import Testing

@testable import HeraldGateway
@testable import HeraldStore

/// The outcome cases every platform has, run for each: what the gateway records for an answer
/// does not depend on which push service gave it.
@Suite("Outcomes, the same for every platform")
struct PlatformOutcomeTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// One platform's answer for each case, recorded as that platform's delivery records it.
    struct Answers: Sendable, CustomTestStringConvertible {
        let platform: DevicePlatform
        /// Accepted, the push service's ID for the message given as `receipt`.
        let accepted: @Sendable (_ receipt: String) -> DeliveryOutcome.Result
        /// The device is gone (uninstalled, unsubscribed), as of `now`.
        let gone: DeliveryOutcome.Result
        /// The device's address is malformed or another sender's (`nil`: the platform has no such answer).
        let invalid: DeliveryOutcome.Result?
        /// The message itself was refused: the device is kept.
        let messageRefused: DeliveryOutcome.Result
        let payloadTooLarge: DeliveryOutcome.Result
        /// The gateway's credentials were refused: every device would get it.
        let credentialsRefused: DeliveryOutcome.Result
        let tooManyRequests: DeliveryOutcome.Result
        let serverError: DeliveryOutcome.Result
        let unavailable: DeliveryOutcome.Result
        let timedOut: DeliveryOutcome.Result
        let connectionFailed: DeliveryOutcome.Result
        let shutdown: DeliveryOutcome.Result

        var testDescription: String { platform.rawValue }
    }

    static let platforms: [Answers] = [
        Answers(
            platform: .apns,
            accepted: { BatchMessages.outcome(.accepted(APNSResponse(apnsID: $0))) },
            gone: BatchMessages.outcome(.rejected(APNSError(status: 410, reason: .unregistered, timestamp: now, apnsID: "a"))),
            invalid: BatchMessages.outcome(.rejected(APNSError(status: 400, reason: .badDeviceToken, timestamp: nil, apnsID: "a"))),
            messageRefused: BatchMessages.outcome(.rejected(APNSError(status: 400, reason: .badCollapseId, timestamp: nil, apnsID: "a"))),
            payloadTooLarge: BatchMessages.outcome(.rejected(APNSError(local: .payloadTooLarge, "over 4 KB"))),
            credentialsRefused: BatchMessages.outcome(.rejected(APNSError(status: 403, reason: .invalidProviderToken, timestamp: nil, apnsID: "a"))),
            tooManyRequests: BatchMessages.outcome(.rejected(APNSError(status: 429, reason: .tooManyRequests, timestamp: nil, apnsID: "a"))),
            serverError: BatchMessages.outcome(.rejected(APNSError(status: 500, reason: .internalServerError, timestamp: nil, apnsID: "a"))),
            unavailable: BatchMessages.outcome(.rejected(APNSError(status: 503, reason: .serviceUnavailable, timestamp: nil, apnsID: "a"))),
            timedOut: BatchMessages.outcome(.failed(APNSClientError(.timedOut, "no answer"))),
            connectionFailed: BatchMessages.outcome(.failed(APNSClientError(.connectionFailed, "refused"))),
            shutdown: BatchMessages.outcome(.failed(APNSClientError(.shutdown, "stopping")))
        ),
        Answers(
            platform: .webpush,
            accepted: { BrowserMessages.outcome(.success(WebPushReceipt(location: $0, attempts: 1)), now: now) },
            gone: webPush(.subscriptionGone, 410),
            invalid: nil,
            messageRefused: webPush(.rejected, 400, "BadWebPushTopic"),
            payloadTooLarge: webPush(.payloadTooLarge, 413),
            credentialsRefused: webPush(.rejected, 403, "BadJwtToken"),
            tooManyRequests: webPush(.tooManyRequests, 429),
            serverError: webPush(.serviceUnavailable, 500),
            unavailable: webPush(.serviceUnavailable, 503),
            timedOut: webPush(.timedOut, nil),
            connectionFailed: webPush(.connectionFailed, nil),
            shutdown: webPush(.shutdown, nil)
        ),
        Answers(
            platform: .fcm,
            accepted: { AndroidMessages.outcome(.success(FCMReceipt(name: $0, attempts: 1)), now: now) },
            gone: fcm(.unregistered, 404, "UNREGISTERED"),
            invalid: fcm(.invalidArgument, 400, "INVALID_ARGUMENT", tokenInvalid: true),
            messageRefused: fcm(.invalidArgument, 400, "INVALID_ARGUMENT"),
            // FCM says a message over 4 KB is an INVALID_ARGUMENT about the message.
            payloadTooLarge: fcm(.invalidArgument, 400, "INVALID_ARGUMENT"),
            credentialsRefused: fcm(.unauthenticated, 401, "UNAUTHENTICATED"),
            tooManyRequests: fcm(.quotaExceeded, 429, "QUOTA_EXCEEDED"),
            serverError: fcm(.internal, 500, "INTERNAL"),
            unavailable: fcm(.unavailable, 503, "UNAVAILABLE"),
            timedOut: fcm(.timedOut, nil, nil),
            connectionFailed: fcm(.connectionFailed, nil, nil),
            shutdown: fcm(.shutdown, nil, nil)
        ),
        Answers(
            platform: .hms,
            accepted: { hms(.success(HMSReceipt(requestID: $0, attempts: 1))) },
            // Push Kit names the tokens that failed; it does not tell an uninstalled app's from a malformed one.
            gone: hms(.success(HMSReceipt(requestID: "r", attempts: 1, failedTokens: [HMSFailedToken(token: "t", isTokenInvalid: true)]))),
            invalid: nil,
            messageRefused: hms(.failure(HMSSendError(.invalidMessage, status: 400, resultCode: "80100003", reason: "said so"))),
            payloadTooLarge: hms(.failure(HMSSendError(.messageTooBig, status: 400, resultCode: "80300008", reason: "said so"))),
            credentialsRefused: hms(.failure(HMSSendError(.unauthenticated, status: 401, resultCode: "80200003", reason: "said so"))),
            // Push Kit's traffic control is 503; another 5xx is its unavailability.
            tooManyRequests: hms(.failure(HMSSendError(.rateLimited, status: 503, reason: "said so"))),
            serverError: hms(.failure(HMSSendError(.internal, status: 500, resultCode: "81000001", reason: "said so"))),
            unavailable: hms(.failure(HMSSendError(.unavailable, status: 502, reason: "said so"))),
            timedOut: hms(.failure(HMSSendError(.timedOut, reason: "no answer"))),
            connectionFailed: hms(.failure(HMSSendError(.connectionFailed, reason: "refused"))),
            shutdown: hms(.failure(HMSSendError(.shutdown, reason: "stopping")))
        ),
    ]

    static func hms(_ result: Result<HMSReceipt, HMSSendError>) -> DeliveryOutcome.Result {
        HuaweiMessages.outcomes(result, tokens: ["t"], now: now)[0]
    }

    static func webPush(_ code: WebPushSendError.Code, _ status: Int?, _ reason: String = "") -> DeliveryOutcome.Result {
        BrowserMessages.outcome(.failure(WebPushSendError(code, status: status, reason: reason)), now: now)
    }

    static func fcm(_ code: FCMSendError.Code, _ status: Int?, _ errorCode: String?, tokenInvalid: Bool = false) -> DeliveryOutcome.Result {
        AndroidMessages.outcome(.failure(FCMSendError(code, status: status, errorCode: errorCode, reason: "said so", isTokenInvalid: tokenInvalid)), now: now)
    }

    @Test("the whole table has every platform")
    func everyPlatform() {
        #expect(Self.platforms.map(\.platform) == DevicePlatform.allCases)
    }

    @Test("accepted carries the push service's ID for the message as the receipt, bounded", arguments: platforms)
    func accepted(_ answers: Answers) {
        #expect(answers.accepted("id-1") == .accepted(receipt: "id-1"))
        guard case .accepted(let receipt?, _) = answers.accepted(String(repeating: "x", count: 4096)) else {
            Issue.record("an accepted answer with a long ID is still accepted")
            return
        }
        #expect(receipt == String(repeating: "x", count: DeliveryOutcome.Result.maximumReceiptLength), "a peer's ID is kept bounded (\(receipt.utf8.count) bytes)")
        // Cut between characters, never inside one.
        #expect(answers.accepted(String(repeating: "é", count: 100)) == .accepted(receipt: String(repeating: "é", count: 64)))
        #expect(answers.accepted(String(repeating: "x", count: 127) + "é") == .accepted(receipt: String(repeating: "x", count: 127)))
    }

    @Test("a device that is gone is rejected as of the answer, and the queue retires it", arguments: platforms)
    func gone(_ answers: Answers) {
        guard case .rejected(let reason, let timestamp) = answers.gone else {
            Issue.record("\(answers.gone)")
            return
        }
        #expect(timestamp == Self.now, "retired only if it has not registered again since")
        #expect(Invalidation.status(for: reason) == .unregistered)
    }

    @Test("a malformed or foreign device address is rejected and the device marked invalid at once", arguments: platforms)
    func invalid(_ answers: Answers) throws {
        guard let result = answers.invalid else { return }  // Web Push: a subscription has no such answer
        guard case .rejected(let reason, nil) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(Invalidation.status(for: reason) == .invalid)
    }

    @Test("a refused message is that device's rejection; the device is kept", arguments: platforms)
    func messageRefused(_ answers: Answers) {
        guard case .rejected(let reason, _) = answers.messageRefused else {
            Issue.record("\(answers.messageRefused)")
            return
        }
        #expect(Invalidation.status(for: reason) == nil)
    }

    @Test("a payload too large is not sent again: final, the device kept", arguments: platforms)
    func payloadTooLarge(_ answers: Answers) {
        switch answers.payloadTooLarge {
        case .failed(let reason), .rejected(let reason, nil):
            #expect(Invalidation.status(for: reason) == nil)
        default:
            Issue.record("\(answers.payloadTooLarge)")
        }
    }

    @Test("refused credentials are the gateway's, not the device's: retried until the notification expires", arguments: platforms)
    func credentials(_ answers: Answers) {
        guard case .retry = answers.credentialsRefused else {
            Issue.record("\(answers.credentialsRefused)")
            return
        }
    }

    @Test("429, 500 and 503 are retried, each under the reason the store has always kept for it", arguments: platforms)
    func overloaded(_ answers: Answers) {
        #expect(answers.tooManyRequests == .retry(reason: "TooManyRequests"))
        #expect(answers.serverError == .retry(reason: "InternalServerError"))
        #expect(answers.unavailable == .retry(reason: "ServiceUnavailable"))
    }

    @Test("no answer (timed out, no connection, the client stopping) is retried under the transport's reason", arguments: platforms)
    func transport(_ answers: Answers) {
        #expect(answers.timedOut == .retry(reason: .gateway(.timedOut)))
        #expect(answers.connectionFailed == .retry(reason: .gateway(.connectionFailed)))
        #expect(answers.shutdown == .retry(reason: .gateway(.shutdown)))
    }

    @Test("each platform's reasons are its own cases, with the strings the store keeps")
    func ownWords() {
        #expect(Self.platforms[1].tooManyRequests == .retry(reason: .webPush(.tooManyRequests)))
        #expect(Self.platforms[2].tooManyRequests == .retry(reason: .fcm(.quotaExceeded)))
        #expect(Self.platforms[1].gone == .rejected(reason: .webPush(.subscriptionGone), timestamp: Self.now))
        #expect(Self.platforms[2].gone == .rejected(reason: .fcm(.unregistered), timestamp: Self.now))
    }
}

/// The seam itself: the workers' split of a batch by platform, the grace cut-off and a delivery
/// that stops early, for every platform, with deliveries that answer as told.
@Suite("Delivery seam")
struct DeliverySeamTests {
    static let apnsToken = String(repeating: "ab", count: 32)
    static let browser = WebPushAddress.id(forEndpoint: "https://web.push.apple.com/QGuH")
    static let android = FCMAddress.id(forToken: "f1:APA91b-token")

    @Test("the registry has each platform once; an app reaches what its configuration names; registration goes by each platform's rules")
    func registry() throws {
        #expect(GatewayPlatforms.all.map { $0.platform }.sorted { $0.rawValue < $1.rawValue } == DevicePlatform.allCases.sorted { $0.rawValue < $1.rawValue })
        for platform in DevicePlatform.allCases { #expect(GatewayPlatforms.conformance(of: platform).platform == platform) }
        #expect(GatewayConfiguration.App(id: "bare").platforms.isEmpty, "no credentials, no webPush, no fcm")
        var fields = DeviceRoutes.DeviceFields()
        fields.platform = .fcm
        #expect(try fields.registration(token: "f1:APA91b-token").fcm?.registrationToken == "f1:APA91b-token")
        fields.environment = .sandbox
        #expect(throws: StoreError.self) { try fields.registration(token: "f1:APA91b-token") }
        fields.platform = .webpush
        #expect(throws: StoreError.self) { try fields.registration(token: "anything") }
        fields.platform = nil
        #expect(try fields.registration(token: Self.apnsToken).environment == .sandbox)
    }

    /// Records `result` for each device, then says so.
    struct Answering: PlatformDelivery {
        let result: DeliveryOutcome.Result
        var answered: AsyncStream<Void>.Continuation? = nil
        func send(_ part: DeliveryPart) async {
            part.recordEach(result)
            answered?.yield()
        }
    }

    /// Never answers, until the test lets it return.
    struct Silent: PlatformDelivery {
        let release: AsyncStream<Void>
        func send(_ part: DeliveryPart) async {
            for await _ in release {}
        }
    }

    /// Answers the first device only, then returns.
    struct Partial: PlatformDelivery {
        func send(_ part: DeliveryPart) async {
            part.record(.accepted(receipt: "first"), at: 0)
        }
    }

    static func batch(_ tokens: [String]) -> WorkBatch {
        WorkBatch(
            notification: QueuedNotification(
                id: "0190bbbb", app: "app", payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), pushType: .alert, priority: .throttled,
                expiration: nil, collapseID: nil, badge: .none, deadline: Date().addingTimeInterval(3600)),
            items: tokens.map { WorkItem(token: $0, badge: nil, attempt: 1, platform: DevicePlatform(deviceID: $0)) }, isResend: false, owner: "w",
            source: .deliveries(tokens.indices.map(Int64.init)))
    }

    static func withStore(_ body: (HeraldStore) async throws -> Void) async throws {
        let scratch = try ScratchDirectory()
        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: "sqlite:\(scratch.path)/seam.db")) { store in
            try await body(store)
        }
    }

    static func outcomes(
        _ batch: WorkBatch, store: HeraldStore, grace: GracePeriod = GracePeriod(), app: GatewayConfiguration.App = .init(id: "app"),
        delivery: @escaping (DevicePlatform) -> any PlatformDelivery
    ) async -> [DeliveryOutcome] {
        await DeliveryWorkers.outcomes(
            of: batch, grace: grace,
            part: { DeliveryPart(batch: $0, app: app, store: store, logger: Logger(label: "test"), outcomes: $1) }, delivery: delivery)
    }

    @Test("a batch of every platform: each part goes to its own platform's delivery, the outcomes a part after another")
    func split() async throws {
        try await Self.withStore { store in
            let tokens = [Self.android, Self.apnsToken, Self.browser, Self.apnsToken.uppercased()]
            let seen = Mutex<[DevicePlatform: Int]>([:])
            let outcomes = await Self.outcomes(Self.batch(tokens), store: store) { platform in
                seen.withLock { $0[platform, default: 0] += 1 }
                return Answering(result: .accepted(receipt: platform.rawValue))
            }
            #expect(seen.withLock { $0 } == [.apns: 1, .webpush: 1, .fcm: 1], "one delivery per platform")
            #expect(outcomes.map(\.token) == [Self.apnsToken, Self.apnsToken.uppercased(), Self.browser, Self.android])
            #expect(outcomes.map(\.result) == ["apns", "apns", "webpush", "fcm"].map { .accepted(receipt: $0) })
        }
    }

    @Test("a platform that never answers: its devices are retried (shutdown) when the grace period ends; the others keep their answers", arguments: DevicePlatform.allCases)
    func graceCutOff(silent: DevicePlatform) async throws {
        try await Self.withStore { store in
            let (answered, signal) = AsyncStream<Void>.makeStream()
            let (release, releasing) = AsyncStream<Void>.makeStream()
            defer { releasing.finish() }
            let grace = GracePeriod()
            // The batch's platforms that answer: two, or all three when the silent one has no device in it.
            let answering = Set<DevicePlatform>([.apns, .webpush, .fcm]).subtracting([silent]).count
            let ending = Task {
                // Ends the grace period once every other platform has answered.
                var count = 0
                for await _ in answered {
                    count += 1
                    if count == answering { break }
                }
                grace.end()
            }
            let outcomes = await Self.outcomes(Self.batch([Self.apnsToken, Self.browser, Self.android]), store: store, grace: grace) { platform in
                platform == silent ? Silent(release: release) as any PlatformDelivery : Answering(result: .accepted(receipt: nil), answered: signal)
            }
            await ending.value
            for outcome in outcomes {
                let expected: DeliveryOutcome.Result = DevicePlatform(deviceID: outcome.token) == silent ? .retry(reason: .gateway(.shutdown)) : .accepted(receipt: nil)
                #expect(outcome.result == expected, "\(outcome.token)")
            }
            #expect(outcomes.count == 3)
        }
    }

    @Test("a delivery that returns before answering every device: those it did not answer are retried", arguments: DevicePlatform.allCases)
    func stopsEarly(platform: DevicePlatform) async throws {
        try await Self.withStore { store in
            let tokens =
                switch platform {
                case .apns: [Self.apnsToken, String(repeating: "cd", count: 32)]
                case .webpush: [Self.browser, WebPushAddress.id(forEndpoint: "https://fcm.googleapis.com/fcm/send/x")]
                case .fcm: [Self.android, FCMAddress.id(forToken: "other-token")]
                case .hms: [HMSAddress.id(forToken: "hms-token"), HMSAddress.id(forToken: "other-token")]
                }
            let outcomes = await Self.outcomes(Self.batch(tokens), store: store) { _ in Partial() }
            #expect(outcomes.map(\.result) == [.accepted(receipt: "first"), .retry(reason: .gateway(.shutdown))])
        }
    }

    @Test("an app without a platform's configuration: each of that platform's devices fails with a reason that names it")
    func notConfigured() async throws {
        try await Self.withStore { store in
            let generation = GatewayClients()
            let app = GatewayConfiguration.App(id: "app")
            let outcomes = await Self.outcomes(Self.batch([Self.android, Self.browser, Self.apnsToken]), store: store, app: app) {
                generation.delivery(for: $0, app: app)
            }
            #expect(
                outcomes.map(\.result) == [
                    .failed(reason: .gateway(.apnsNotConfigured)), .failed(reason: .webPush(.notConfigured)), .failed(reason: .fcm(.notConfigured)),
                ])
        }
    }
}
