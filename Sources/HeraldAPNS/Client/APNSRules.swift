import HeraldCore
import HeraldTransport
@_spi(HeraldFlow) import HeraldFlow
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// APNs's rules over the transport's HTTP/2 pool: the provider token on every request, what an
/// answer means (apns-spec §1.6), and whether to try again (§1.7, ``RetryDecider``).
struct APNSRules: HTTP2Rules {
    var issuer: ProviderTokenIssuer?
    var decider: RetryDecider
    var metrics: ClientMetrics

    func currentAuthorization() throws(TransportError) -> HTTP2Authorization? {
        guard let issuer else { return nil }
        do {
            let token = try issuer.currentToken()
            return HTTP2Authorization(generation: token.generation, value: token.authorization)
        } catch {
            throw TransportError(.invalidCredentials, "provider token could not be signed: \(error)")
        }
    }

    func makeConnectionState() -> AnyObject? {
        RequestEncoder.Memo()
    }

    func judge(_ attempt: HTTP2Attempt, of job: any HTTP2Job) -> HTTP2Verdict {
        let job = unsafeDowncast(job, to: RequestJob.self)
        let result: AttemptResult
        switch attempt {
        case .answered(let answer):
            if job.succeeds(with: answer.status) {
                return finish(.succeeded(RawResponse(answer)), job: job)
            }
            result = .rejected(APNSError(status: answer.status, responseBody: answer.body, apnsID: answer["apns-id"]))
        case .unprocessed: result = .unprocessed
        case .lost(let why): result = .lost(why)
        case .timedOut: result = .timedOut
        }
        let decision = decider.decide(
            result, attempts: job.attempts, expiredTokenRetries: job.expiredTokenRetries,
            unprocessedResends: job.unprocessedResends, expiration: job.expiration, now: Date(), random: Double.random(in: 0..<1)
        )
        switch decision {
        case .final(let final):
            return finish(final, job: job)
        case .retry(let delay, let renewToken, let avoidConnection):
            if case .unprocessed = result {
                job.unprocessedResends += 1
                job.attempts -= 1  // never reached the server
            }
            if renewToken, let issuer, let rejected = job.authorization {
                job.expiredTokenRetries += 1
                _ = try? issuer.renew(afterRejectionOfGeneration: rejected.generation)
            }
            job.logger.debug(
                "APNs notification will be retried",
                metadata: ["attempt": "\(job.attempts)", "delay": "\(delay)", "result": "\(Self.describe(result))"]
            )
            return .retry(after: .nanoseconds(Int64(delay.seconds * 1e9)), avoidConnection: avoidConnection)
        }
    }

    func fail(_ job: any HTTP2Job, _ error: TransportError) {
        unsafeDowncast(job, to: RequestJob.self).result = .failed(APNSClientError(error))
    }

    func finished(_ jobs: [any HTTP2Job]) {
        var index = 0
        while index < jobs.count {
            let first = unsafeDowncast(jobs[index], to: RequestJob.self)
            guard let sink = first.sink else {
                first.complete()
                index += 1
                continue
            }
            var outcomes: [APNSOutcome] = []
            // One copy of each notification, into its outcome: one lock per bulk send.
            while index < jobs.count, case let job = unsafeDowncast(jobs[index], to: RequestJob.self), job.sink === sink,
                case .notification(let notification, let number, _) = job.request
            {
                outcomes.append(job.outcome(job.result ?? .failed(APNSClientError(.connectionLost, "no result")), notification: notification, index: number))
                index += 1
            }
            sink.deliver(contentsOf: outcomes)
        }
    }

    private func finish(_ final: RetryDecision.FinalResult, job: RequestJob) -> HTTP2Verdict {
        job.result = final
        record(final, job: job)
        return .done
    }

    private func record(_ final: RetryDecision.FinalResult, job: RequestJob) {
        switch final {
        case .succeeded(let response):
            metrics.accepted.increment()
            job.logger.trace(
                "APNs accepted the request",
                metadata: ["status": "\(response.status)", "apns-id": "\(response.apnsID ?? response.requestID ?? "")"]
            )
        case .rejected(let error):
            metrics.rejected(error.reason)
            job.logger.debug(
                "APNs rejected the notification",
                metadata: ["apns-id": "\(error.apnsID ?? "")", "reason": "\(error.reason)", "status": "\(error.status ?? 0)"]
            )
        case .failed(let error):
            metrics.failed.increment()
            job.logger.debug("APNs notification could not be delivered", metadata: ["error": "\(error)"])
        }
    }

    private static func describe(_ result: AttemptResult) -> String {
        switch result {
        case .rejected(let error): error.reason.rawValue
        case .unprocessed: "not processed by the server"
        case .lost(let why): why
        case .timedOut: "timed out"
        }
    }
}

extension APNSClientError {
    /// The transport's failure, under the same code.
    init(_ error: TransportError) {
        let code: Code =
            switch error.code {
            case .connectionFailed: .connectionFailed
            case .tlsFailed, .untrusted: .tlsFailed
            case .http2NotOffered: .http2NotOffered
            case .addressNotAllowed: .addressNotAllowed
            case .connectionLost: .connectionLost
            case .timedOut: .timedOut
            case .shutdown: .shutdown
            case .invalidCredentials: .invalidCredentials
            case .protocolError: .protocolError
            }
        self.init(code, error.message)
    }
}
