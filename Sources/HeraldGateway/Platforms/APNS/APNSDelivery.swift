import HeraldAPNS
import HeraldCore
import HeraldStore

/// APNs devices: each goes to its app's client for its token environment (and for the push type's
/// token kind, when that kind has a credential of its own), as the answers stream in.
struct APNSDelivery: PlatformDelivery {
    /// The workers' APNs clients (every app's).
    let platform: APNSPlatform

    /// Each device's environment's host (most parts: all the app's default one).
    func hosts(of part: DeliveryPart) async -> PartHosts {
        let app = part.app
        guard app.apnsTopic != nil else { return PartHosts(host: nil) }
        let defaultEnvironment = app.defaultEnvironment
        guard part.items.contains(where: { ($0.environment ?? defaultEnvironment) != defaultEnvironment }) else {
            return PartHosts(host: PushHost.name(app.host(for: defaultEnvironment)))
        }
        let names = Dictionary(uniqueKeysWithValues: TokenEnvironment.allCases.map { ($0, PushHost.name(app.host(for: $0))) })
        return PartHosts(eachOf: part.items.map { names[$0.environment ?? defaultEnvironment] })
    }

    func send(_ part: DeliveryPart) async {
        let app = part.app
        // An app that reaches other platforms only (no APNs credentials, or not any more).
        guard let topic = app.apnsTopic else {
            part.recordEach(.failed(reason: .gateway(.apnsNotConfigured)))
            return
        }
        let messages: BatchNotifications
        do {
            messages = try BatchNotifications(for: part.batch, topic: topic, receipts: part.receiptMaker())
        } catch {
            part.recordEach(.failed(reason: .gateway(.payloadInvalid)))
            return
        }
        // The items that have a notification (a token that is not hex has none), in its order,
        // and their positions in the part when some have none.
        let items = part.items
        let positions: [Int]?
        if messages.invalid.isEmpty {
            positions = nil
        } else {
            for index in messages.invalid { part.record(.failed(reason: .apns(.badDeviceToken)), at: index) }
            let invalid = Set(messages.invalid)
            positions = items.indices.filter { !invalid.contains($0) }
        }
        let sent = positions.map { $0.map { items[$0] } } ?? items
        let groups = BatchMessages.groups(of: sent, defaultEnvironment: app.defaultEnvironment)
        let appID = app.id
        // The kind's own credential's clients, if it has one (a VoIP certificate).
        let kind = TokenKind(for: part.batch.notification.pushType).flatMap { app.credentialsByKind[$0] == nil ? nil : $0 }
        let keepsIDs = part.batch.keepsAcceptanceIDs
        let logger = part.logger
        // Devices are taken as the client has room for them: once the host is backed off, the
        // rest are not taken, and wait for it (HostIsolation).
        let stop: (@Sendable () -> Bool)? = part.host == nil ? nil : { @Sendable in part.hostBackedOff() }
        await withTaskGroup(of: Void.self) { senders in
            // Each device goes to its own environment's client (most batches: all to one).
            for (environment, indices) in groups {
                // No credential for this environment (credentialsByEnvironment): never sent with another's.
                guard APNSPlatform.credential(of: app, environment: environment, kind: kind) != nil else {
                    for index in indices { part.record(.failed(reason: .gateway(.apnsEnvironmentNotConfigured)), at: positions?[index] ?? index) }
                    continue
                }
                senders.addTask {
                    let notifications = messages.part(indices.count == messages.count ? nil : indices, stoppingWhen: stop)
                    do {
                        // No client once the clients have shut down: the devices are retried.
                        _ = try await platform.using(AppEnvironment(app: appID, environment: environment, kind: kind), app: app) { client in
                            for try await outcome in client.send(contentsOf: notifications, logger: logger) {
                                let index = indices[outcome.index]
                                part.record(BatchMessages.outcome(outcome.result, keepingID: keepsIDs), at: positions?[index] ?? index)
                            }
                        }
                    } catch {
                        logger.error("the send ended early", metadata: ["error": "\(error)", "environment": "\(environment)"])
                    }
                }
            }
        }
    }
}
