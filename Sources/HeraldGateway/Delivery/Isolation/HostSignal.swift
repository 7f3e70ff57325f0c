import HeraldCore
import HeraldStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What one device's outcome says about its push service's host, for its ``HostCircuit``: every
/// platform's outcomes are read here, in one place, by their reasons.
enum HostSignal: Sendable, Hashable {
    /// The host answered: it accepted the message, or refused it for a reason about the device or
    /// the message (a 4xx: `BadDeviceToken`, `Unregistered`, a 410 Gone), which only a working
    /// host gives.
    case answered
    /// The host failed: a 5xx, no answer in time, no connection or one lost. `notBefore`: when
    /// the push service asked to be tried again (`Retry-After`), if it did.
    case failed(notBefore: Date?)

    /// What `result` says about the host; `nil`: nothing (a 429 about one device's rate, a
    /// credential refused, a device the gateway did not send, the process stopping).
    init?(_ result: DeliveryOutcome.Result) {
        switch result {
        case .accepted, .rejected:
            self = .answered
        case .retry(let reason, let notBefore):
            guard Self.hostFailures.contains(reason) else { return nil }
            self = .failed(notBefore: notBefore)
        case .failed, .skipped:
            return nil
        }
    }

    /// The retry reasons that are the host's failure, whatever the platform (each platform's
    /// reasons for these share APNs's strings: docs/gateway.md, "Platforms"):
    ///
    /// - `ServiceUnavailable`: APNs's 503 (apns-spec §1.7); a browser's push service's 502, 503
    ///   or 504 (RFC 8030); FCM's `UNAVAILABLE`; Push Kit's other 5xx.
    /// - `Shutdown`: APNs's 503 for a server shutting down, still so after the client's retries.
    /// - `InternalServerError`: APNs's, a push service's, FCM's `INTERNAL`, Push Kit's 500.
    /// - `connectionFailed`, `connectionLost`, `timedOut`: the client got no answer at all.
    ///
    /// Not: `TooManyRequests` (APNs's 429 is about one device; FCM's quota and Push Kit's
    /// traffic control are retried after their own wait), the credentials' reasons (every
    /// device fails alike until the configuration is mended: no host is at fault), `tlsFailed`
    /// (a trust store to mend), `shutdown` (this process stopping).
    static let hostFailures: Set<DeliveryReason> = [
        .apns(.serviceUnavailable), .apns(.shutdown), .apns(.internalServerError),
        .gateway(.connectionFailed), .gateway(.connectionLost), .gateway(.timedOut),
    ]
}
