/// The bearer a credential holds (an OAuth access token: FCM's, Push Kit's; or a self-signed
/// service-account JWT), as a value: when it can be used as it is, when a fresh one should be made
/// while it still serves, and when a send must wait for one. Each platform's token provider
/// performs what it says; tested without a network.
package struct BearerTokenCache: Sendable {
    /// What a send does for its bearer.
    package enum Action: Sendable, Hashable {
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

    package init() {}

    /// How long before its expiry a token is replaced: a tenth of its lifetime, at most five
    /// minutes. Google's and Huawei's hour-long tokens are replaced 5 minutes early; a mock's
    /// 60-second ones 6 seconds early, so a short lifetime never means a fetch per message.
    package static let maximumMargin: Duration = .seconds(300)

    package static func refreshMargin(lifetime: Duration) -> Duration {
        min(max(lifetime, .zero) / 10, maximumMargin)
    }

    /// What a send at `now` does.
    package func next(now: ContinuousClock.Instant) -> Action {
        guard let held, now < held.expiresAt else { return .wait }
        return now < held.refreshAt ? .use(held.token) : .useAndRefresh(held.token)
    }

    /// A token fetched by a request that started at `requested` (its lifetime counts from then,
    /// not from the answer: the server's clock started no later).
    package mutating func store(_ token: String, lifetime: Duration, requested: ContinuousClock.Instant) {
        let expiresAt = requested + lifetime
        held = Held(token: token, refreshAt: expiresAt - Self.refreshMargin(lifetime: lifetime), expiresAt: expiresAt)
    }

    /// The service refused `token` (FCM's 401, Push Kit's 80200001/80200003/80200005): sends wait
    /// for a fresh one. Another token, already made by a send that met the same refusal first, is kept.
    package mutating func invalidate(_ token: String) {
        if held?.token == token { held = nil }
    }
}
