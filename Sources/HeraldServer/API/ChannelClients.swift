import HeraldClient

/// The APNs clients the API's channel routes use, per app and environment.
struct ChannelClients: Sendable {
    /// On the channel-management host.
    var management: [AppEnvironment: APNSClient] = [:]
    /// On the push host, to send broadcasts through.
    var broadcast: [AppEnvironment: APNSClient] = [:]
    /// The ones these routes run (the gateway's service group runs them): the management
    /// clients, and broadcast clients not shared with the workers.
    var owned: [APNSClient] = []
}
