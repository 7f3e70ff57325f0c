import Synchronization

/// Issues the provider token for one key, cached and renewed by APNs's rules (apns-spec §2):
/// one token at a time, renewed once it is ``Policy/renewalAge`` old (default 50 minutes), never
/// more often than every 20 minutes (`TooManyProviderTokenUpdates`) unless APNs answered
/// `ExpiredProviderToken` and the caller says so with ``renew(afterRejectionOf:)``.
///
/// Use ``shared(for:policy:)`` so every connection and client in the process shares one token per
/// (team, key), the failure many providers ship with (field-lessons #1).
public final class ProviderTokenIssuer: Sendable {
    /// When tokens are renewed.
    public struct Policy: Sendable, Hashable {
        /// APNs refuses a token changed more often than this on a connection (§2).
        public static let minimumRenewalAge: Duration = .seconds(20 * 60)
        /// APNs refuses a token older than an hour; renew before that.
        public static let maximumRenewalAge: Duration = .seconds(59 * 60)

        /// How old a token gets before the next request receives a new one; clamped to
        /// ``minimumRenewalAge``...``maximumRenewalAge``.
        public let renewalAge: Duration

        public init(renewalAge: Duration) {
            self.renewalAge = min(max(renewalAge, Self.minimumRenewalAge), Self.maximumRenewalAge)
        }

        /// Renew after 50 minutes.
        public static let `default` = Policy(renewalAge: .seconds(50 * 60))
    }

    /// The key that signs the tokens.
    public let key: ProviderKey
    /// The renewal policy.
    public let policy: Policy
    private let clock: any ProviderTokenClock
    private let state = Mutex<State>(State())

    private struct State {
        var token: ProviderToken?
        var mintedAt: Duration = .zero
        var minted = 0
    }

    /// An issuer of its own. Prefer ``shared(for:policy:)`` outside tests.
    public init(key: ProviderKey, policy: Policy = .default, clock: any ProviderTokenClock = SystemProviderTokenClock()) {
        self.key = key
        self.policy = policy
        self.clock = clock
    }

    /// The token to send now: the cached one, or a new one if it has reached the renewal age.
    public func currentToken() throws(ProviderKeyError) -> ProviderToken {
        try state.withLock { state throws(ProviderKeyError) in
            if let token = state.token, clock.uptime() - state.mintedAt < policy.renewalAge {
                return token
            }
            return try mint(&state)
        }
    }

    /// After APNs answered `ExpiredProviderToken` for `rejected`: a new token, unless another
    /// caller already renewed it (then the newer one), so a burst of rejections mints only once.
    public func renew(afterRejectionOf rejected: ProviderToken) throws(ProviderKeyError) -> ProviderToken {
        try renew(afterRejectionOfGeneration: rejected.generation)
    }

    /// ``renew(afterRejectionOf:)`` for the token of generation `rejected`.
    public func renew(afterRejectionOfGeneration rejected: Int) throws(ProviderKeyError) -> ProviderToken {
        try state.withLock { state throws(ProviderKeyError) in
            if let token = state.token, token.generation != rejected {
                return token
            }
            return try mint(&state)
        }
    }

    /// How many tokens this issuer has signed.
    public var tokensMinted: Int { state.withLock { $0.minted } }

    private func mint(_ state: inout State) throws(ProviderKeyError) -> ProviderToken {
        let token = try ProviderToken(key: key, issuedAt: clock.now(), generation: state.minted + 1)
        state.token = token
        state.mintedAt = clock.uptime()
        state.minted += 1
        return token
    }

    // MARK: Sharing

    private struct Identity: Hashable {
        var teamID: String
        var keyID: String
        var publicKey: [UInt8]
    }

    private static let registry = Mutex<[Identity: ProviderTokenIssuer]>([:])

    /// The process-wide issuer for this key: every caller with the same (team, key ID, key) gets the
    /// same issuer, hence the same token. The policy of the first caller applies.
    public static func shared(for key: ProviderKey, policy: Policy = .default) -> ProviderTokenIssuer {
        let identity = Identity(teamID: key.teamID, keyID: key.keyID, publicKey: Array(key.publicKey.rawRepresentation))
        return registry.withLock { issuers in
            if let issuer = issuers[identity] { return issuer }
            let issuer = ProviderTokenIssuer(key: key, policy: policy)
            issuers[identity] = issuer
            return issuer
        }
    }
}
