import HeraldFCM
import HeraldStore
import Logging

/// The FCM client of each app that reaches Android devices (`apps[].fcm`).
struct FCMClients: PlatformClients {
    static let platform = DevicePlatform.fcm

    /// By app ID.
    let clients: [String: FCMClient]

    init() {
        clients = [:]
    }

    init(configuration: GatewayConfiguration, logger: Logger) throws {
        var clients: [String: FCMClient] = [:]
        for app in configuration.apps {
            guard let fcm = app.fcm else { continue }
            var settings = FCMClient.Configuration(serviceAccount: fcm.serviceAccount)
            settings.endpoint = fcm.endpoint
            settings.additionalTrustRoots = fcm.trustRoots
            settings.maximumConnections = fcm.connections
            // The queue retries: one attempt per claim, as for APNs.
            settings.retry = .none
            var clientLogger = logger
            clientLogger[metadataKey: "app"] = "\(app.id)"
            logger.info("FCM client", metadata: ["app": "\(app.id)", "project": "\(fcm.serviceAccount.projectID)", "endpoint": "\(fcm.endpoint)"])
            clients[app.id] = try FCMClient(configuration: settings, logger: clientLogger)
        }
        self.clients = clients
    }

    func delivery(for app: GatewayConfiguration.App) -> any PlatformDelivery {
        FCMDelivery(client: clients[app.id])
    }

    func shutdown() async {
        await withTaskGroup(of: Void.self) { group in
            for client in clients.values { group.addTask { try? await client.shutdown() } }
        }
    }
}
