import HeraldStore
import Logging

/// One platform's clients for the apps of one configuration, as the workers send through them:
/// made when the configuration is loaded (and again on each reload), shut down with their
/// generation. Each platform's conformance lives in its folder under `Platforms/`, beside its
/// ``PlatformDelivery``; ``GatewayPlatforms/all`` lists them.
protocol PlatformClients: Sendable {
    /// The devices it reaches.
    static var platform: DevicePlatform { get }

    /// No client for any app: every device of the platform fails as not configured.
    init()

    /// The clients the apps of `configuration` that use this platform need. Nothing connects
    /// until it has something to send.
    init(configuration: GatewayConfiguration, logger: Logger) throws

    /// How `app`'s devices of this platform are sent.
    func delivery(for app: GatewayConfiguration.App) -> any PlatformDelivery

    /// Shuts every client down, each draining what it has in flight.
    func shutdown() async
}

/// The platforms the gateway sends to: a new platform is a line here, besides its folder and its
/// ``DevicePlatform`` case.
enum GatewayPlatforms {
    static let all: [any PlatformClients.Type] = [APNSClients.self, WebPushClients.self, FCMClients.self]

    /// Every platform's clients for `configuration` (none when `workers` is false: this process
    /// only serves the API).
    static func clients(for configuration: GatewayConfiguration, workers: Bool, logger: Logger) throws -> [DevicePlatform: any PlatformClients] {
        var made: [DevicePlatform: any PlatformClients] = [:]
        for platform in all {
            made[platform.platform] = workers ? try platform.init(configuration: configuration, logger: logger) : platform.init()
        }
        return made
    }
}
