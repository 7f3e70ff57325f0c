import AsyncHTTPClient
import Crypto
import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Sends the webhook outbox's events, one task per process (with the workers):
///
/// - Claims up to ``WebhookSenderSettings/batchSize`` due events under a lease of the queue's
///   length (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so processes sharing a database each send
///   their own; SQLite: its one writer), and POSTs each to its webhook, signed.
/// - 2xx: the event leaves the outbox. Anything else, or no answer within
///   ``WebhookSenderSettings/timeout``: it is retried with back-off (``Backoff``) until its
///   webhook's give-up time, then dropped with a metric and a log line.
/// - A process killed mid-way loses nothing: its lease runs out and the event is sent again,
///   with the same ID (at least once).
///
/// At most ``WebhookSenderSettings/maximumResponseBytes`` of an answer are read; a receiver
/// that never answers is cut off at the timeout.
struct WebhookSender: Service {
    let store: HeraldStore
    let live: LiveConfiguration
    let metrics: WebhookMetrics
    let settings: WebhookSenderSettings
    /// How long a claim lasts: the queue's lease.
    let lease: Duration
    /// How often the pending gauge is read.
    let statisticsInterval: Duration
    let logger: Logger
    /// This process's sender, as its leases name it.
    let owner = "webhooks-\(UInt64.random(in: 0...UInt64.max))"

    func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.httpVersion = .http1Only
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        let timeout = TimeAmount(settings.timeout)
        configuration.timeout = .init(connect: timeout, read: timeout)
        let http = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration, backgroundActivityLogger: logger)
        let clock = ContinuousClock()
        var nextStatistics = clock.now
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            if clock.now >= nextStatistics {
                await refreshPending()
                nextStatistics = clock.now + statisticsInterval
            }
            let claimed: [WebhookDelivery]
            do {
                claimed = try await store.claimWebhookEvents(owner: owner, limit: settings.batchSize, lease: lease)
            } catch {
                logger.warning("cannot claim webhook events; trying again", metadata: ["error": "\(error)"])
                claimed = []
            }
            if claimed.isEmpty {
                _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: settings.pollInterval) }
                continue
            }
            await withTaskGroup(of: Void.self) { group in
                for event in claimed { group.addTask { await send(event, with: http) } }
            }
        }
        try? await http.shutdown()
    }

    func refreshPending() async {
        metrics.recordRefused(store.takeRefusedWebhookEvents())
        do {
            metrics.recordPending(try await store.pendingWebhookEvents())
        } catch {
            logger.debug("cannot read the webhook outbox", metadata: ["error": "\(error)"])
        }
    }

    /// One attempt at one event, and what follows from it.
    func send(_ event: WebhookDelivery, with http: HTTPClient) async {
        let metadata: Logger.Metadata = ["event": "\(event.id)", "app": "\(event.app)", "type": "\(event.type.rawValue)", "webhook": "\(Self.origin(event.hook))"]
        guard let hook = live.configuration.app(event.app)?.webhooks.first(where: { $0.url == event.hook }) else {
            logger.warning("webhook event dropped: its webhook is no longer configured", metadata: metadata)
            await finish(event, dropped: true)
            return
        }
        let (status, problem) = await post(event, to: hook, with: http)
        let decision = WebhookDecision.decide(
            status: status, attempt: event.attempt, createdAt: event.createdAt, giveUpAfter: hook.giveUpAfter, now: Date(),
            backoff: Backoff(initial: settings.initialRetryDelay, maximum: settings.maximumRetryDelay, jitter: 0.1), random: Double.random(in: 0..<1)
        )
        switch decision {
        case .sent:
            await finish(event, dropped: false)
        case .retry(let at):
            metrics.recordFailedAttempt(app: event.app, type: event.type)
            logger.debug("webhook attempt failed; retrying", metadata: metadata.merging(["problem": "\(problem)", "attempt": "\(event.attempt)"]) { $1 })
            do {
                try await store.retryWebhookEvent(event, owner: owner, at: at, error: problem)
            } catch {
                logger.warning("cannot reschedule a webhook event; it is sent again when its lease runs out", metadata: ["error": "\(error)"])
            }
        case .drop:
            metrics.recordFailedAttempt(app: event.app, type: event.type)
            logger.warning(
                "webhook event dropped: its receiver did not take it before the give-up time",
                metadata: metadata.merging(["problem": "\(problem)", "attempts": "\(event.attempt)", "giveUpAfter": "\(hook.giveUpAfter)"]) { $1 }
            )
            await finish(event, dropped: true)
        }
    }

    private func finish(_ event: WebhookDelivery, dropped: Bool) async {
        do {
            // Counted only by the sender that still held it (another took it over otherwise).
            guard try await store.finishWebhookEvent(event, owner: owner) else { return }
            if dropped { metrics.recordDropped(app: event.app, type: event.type) } else { metrics.recordSent(app: event.app, type: event.type) }
        } catch {
            logger.warning("cannot record a webhook event sent; it is sent again when its lease runs out", metadata: ["error": "\(error)"])
        }
    }

    /// POSTs the event; the receiver's status, or `nil` and why there is none.
    private func post(_ event: WebhookDelivery, to hook: GatewayConfiguration.Webhook, with http: HTTPClient) async -> (Int?, String) {
        let timestamp = Int(Date().timeIntervalSince1970)
        var request = HTTPClientRequest(url: hook.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "herald-webhooks")
        request.headers.add(name: "Herald-Signature", value: Self.signature(body: event.body, timestamp: timestamp, secret: hook.secret))
        request.body = .bytes(ByteBuffer(bytes: event.body))
        let signed = request
        let timeout = settings.timeout
        do {
            // The deadline covers the answer's body too: a receiver that sends its head and then
            // nothing is cut off as one that never answers.
            let status = try await withThrowingTaskGroup(of: Int?.self) { group in
                group.addTask {
                    let response = try await http.execute(signed, timeout: .seconds(Int64(timeout.components.seconds) + 1))
                    var read = 0
                    for try await part in response.body {
                        read += part.readableBytes
                        if read > WebhookSenderSettings.maximumResponseBytes { break }
                    }
                    return Int(response.status.code)
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let status else { return (nil, "no answer within \(timeout)") }
            return (status, "HTTP \(status)")
        } catch {
            return (nil, "unreachable: \(error)")
        }
    }

    /// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.
    static func signature(body: [UInt8], timestamp: Int, secret: WebhookSecret) -> String {
        var message = Array("\(timestamp).".utf8)
        message += body
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret.bytes))
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        for byte in code {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0xF)])
        }
        return "t=\(timestamp),v1=\(String(decoding: hex, as: UTF8.self))"
    }

    /// A webhook URL as logs name it: its scheme and host, never its path or query (which may
    /// carry a token of the receiver's).
    static func origin(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return "?" }
        let rest = url[schemeEnd.upperBound...]
        return String(url[..<schemeEnd.upperBound]) + String(rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" })
    }
}
