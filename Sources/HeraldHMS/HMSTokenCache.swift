/// The bearer a credential holds (an OAuth access token, or a self-signed service-account JWT),
/// as a value: when it can be used as it is, when a fresh one should be made while it still
/// serves, and when a send must wait for one. Tested without a network.
struct HMSTokenCache: Sendable {
    /// What a send does for its bearer.
    enum Action: Sendable, Hashable {
        /// Use this token.
        case use(String)
        /// Use this token, and fetch the next one now (one fetch, whoever asks).
        case useAndRefresh(String)
        /// No usable token: wait for the fetch (starting it if none is running).
        case wait
    }

    private struct Held: Sendable {
        var token: String
        var refreshAt: ContinuousClock.Instant
        var expiresAt: ContinuousClock.Instant
    }

    private var held: Held?

    /// How long before its expiry a token is replaced: a tenth of its lifetime, at most five
    /// minutes (Huawei's hour-long tokens 5 minutes early, a mock's 60-second ones 6 seconds).
    static let maximumMargin: Duration = .seconds(300)

    static func refreshMargin(lifetime: Duration) -> Duration {
        min(max(lifetime, .zero) / 10, maximumMargin)
    }

    /// What a send at `now` does.
    func next(now: ContinuousClock.Instant) -> Action {
        guard let held, now < held.expiresAt else { return .wait }
        return now < held.refreshAt ? .use(held.token) : .useAndRefresh(held.token)
    }

    /// A token got by a request that started at `requested` (its lifetime counts from then).
    mutating func store(_ token: String, lifetime: Duration, requested: ContinuousClock.Instant) {
        let expiresAt = requested + lifetime
        held = Held(token: token, refreshAt: expiresAt - Self.refreshMargin(lifetime: lifetime), expiresAt: expiresAt)
    }

    /// Push Kit refused `token` (401, 80200001/80200003/80200005): sends wait for a fresh one. A
    /// newer token, already made by a send that met the same refusal first, is kept.
    mutating func invalidate(_ token: String) {
        if held?.token == token { held = nil }
    }
}
