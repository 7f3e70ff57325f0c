import Hummingbird

/// What a request carries through the gateway's middleware to its route.
public struct GatewayContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The API key the request presented, once ``AuthenticationMiddleware`` accepted it.
    public var apiKey: APIKey?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}
