import Crypto
import HeraldCore
import HeraldStore
import HeraldWebPush
import Hummingbird
import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `POST /_matrix/push/v1/notify`: the Matrix Push Gateway API (v1), so a homeserver's HTTP
/// pushers reach the apps' devices through Herald instead of Sygnal (docs/matrix.md).
///
/// Each pushkey is registered as a device of the app its `app_id` names (`matrix.appIds` in the
/// app's configuration), and one notification is queued for it, stored before the answer as
/// `POST /v1/apps/{app}/notifications` stores one. A pushkey of an unknown `app_id`, one that can
/// never reach a device, or one whose device Herald retired (its push service said it is gone)
/// is answered in `rejected`, and the homeserver removes its pusher. The API has no credentials
/// (homeservers send none): it answers only for the `app_id`s the configuration names, and 404
/// when no app has `matrix`.
struct MatrixRoutes {
    let api: GatewayAPI
    let directory = MatrixDirectory()

    func add(to router: Router<GatewayContext>) {
        router.post("_matrix/push/v1/notify", use: notify)
    }

    @Sendable func notify(request: Request, context: GatewayContext) async throws -> Response {
        do {
            return try await handle(request, context: context)
        } catch {
            let (answer, isInternal) = MatrixError.from(error)
            if isInternal {
                context.logger.error("request failed", metadata: ["route": "\(context.endpointPath ?? "-")", "error": "\(String(describing: error))"])
            }
            return answer.response()
        }
    }

    /// One device's plan, made before anything is stored: a malformed request stores nothing.
    private struct Plan {
        var pushkey: String
        var target: MatrixDirectory.Target
        var registration: DeviceRegistration
        var pushkeyTimestamp: Int?
        var decision: MatrixMessages.Decision
    }

    private func handle(_ request: Request, context: GatewayContext) async throws -> Response {
        let snapshot = api.live.snapshot
        let targets = directory.targets(of: snapshot)
        guard !targets.isEmpty else {
            throw MatrixError.unrecognized("this gateway serves no Matrix push gateway: no app of its configuration has matrix")
        }
        let limit = snapshot.configuration.limits.maximumBodySize
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw MatrixError(.contentTooLarge, "M_TOO_LARGE", "the request body is over \(limit) bytes")
        } catch is NIOTooManyBytesError {
            throw MatrixError(.contentTooLarge, "M_TOO_LARGE", "the request body is over \(limit) bytes")
        }
        let notification = try MatrixNotification.parse(buffer.readableBytesView)

        var rejected: [String] = []
        var plans: [Plan] = []
        for device in notification.devices {
            guard let target = targets[device.appID] else {
                // As Sygnal: a pushkey of an app this gateway does not serve is rejected.
                context.logger.debug("matrix: unknown app_id", metadata: ["appID": "\(PeerText(device.appID, limit: 64))"])
                rejected.append(device.pushkey)
                continue
            }
            switch MatrixPushkey.reading(device, platform: target.platform, webPush: target.webPush) {
            case .notAllowed:
                continue
            case .unusable(let why):
                context.logger.debug("matrix: pushkey rejected", metadata: ["appID": "\(PeerText(device.appID, limit: 64))", "why": "\(PeerText(why, limit: 200))"])
                rejected.append(device.pushkey)
            case .device(let registration):
                let decision = MatrixMessages.decision(for: notification, device: device, platform: target.platform)
                if case .unusable = decision {
                    rejected.append(device.pushkey)
                    continue
                }
                plans.append(Plan(pushkey: device.pushkey, target: target, registration: registration, pushkeyTimestamp: device.pushkeyTimestamp, decision: decision))
            }
        }
        for app in Set(plans.map(\.target.app)) { try NotificationRoutes.checkBacklog(of: app, api: api) }

        let now = Date()
        for plan in plans {
            let app = plan.target.app
            var queued: NotificationRequest?
            if case .send(let push) = plan.decision {
                var request = NotificationRequest(
                    app: app, audience: .tokens([plan.registration.token]), payload: push.payload, pushType: push.pushType, priority: push.priority,
                    idempotencyKey: notification.eventID.map { Self.idempotencyKey(event: $0, device: plan.registration.token) }
                )
                if let options = push.options { request.platformOptions[plan.target.platform] = options }
                queued = request
            }
            // The device as stored, its registration and its notification in one transaction:
            // stored before the answer, so from here it is delivered at least once. A retired
            // device stays retired unless its pusher was set again after it was retired (Apple's
            // rule for a token registered again, by the pushkey's time).
            let setAt = plan.pushkeyTimestamp.map { Date(timeIntervalSince1970: Double($0)) }
            switch try await api.store.enqueue(queued, forPusher: plan.registration, app: app, setAt: setAt, now: now) {
            case .rejected:
                rejected.append(plan.pushkey)
            case .registered:
                break
            case .queued(let stored, let created):
                if created {
                    api.metrics.recordEnqueued()
                    api.backlog.add(stored.counts.pending, app: app)
                }
            }
        }
        let answer = rejected
        return JSONBody.object { writer in
            writer.key("rejected")
            writer.strings(answer)
        }
    }

    /// The spec asks for duplicate suppression by `event_id` (a homeserver retries a request
    /// whose answer it did not get): one notification per event and device, whatever the retries.
    static func idempotencyKey(event: String, device: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var key = Array("matrix:".utf8)
        for byte in SHA256.hash(data: Array("\(event)\n\(device)".utf8)) {
            key.append(digits[Int(byte >> 4)])
            key.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: key, as: UTF8.self)
    }
}

/// Which app and platform each Matrix `app_id` of the configuration in force leads to: made once
/// per configuration (each reload makes a new client generation), so a request looks its
/// devices up without going through the apps.
final class MatrixDirectory: Sendable {
    struct Target: Sendable {
        var app: String
        var platform: DevicePlatform
        /// The app's Web Push endpoint policy, for a `webpush` app ID.
        var webPush: WebPushSubscription.Policy?
    }

    private let cache = Mutex<(generation: Int, targets: [String: Target])?>(nil)

    func targets(of snapshot: LiveConfiguration.Snapshot) -> [String: Target] {
        if let cached = cache.withLock({ $0 }), cached.generation == snapshot.generation { return cached.targets }
        var targets: [String: Target] = [:]
        for app in snapshot.configuration.apps {
            // The first app naming an app ID has it (a file naming one twice is refused).
            for (appID, platform) in app.matrix?.appIDs ?? [:] where targets[appID] == nil {
                targets[appID] = Target(app: app.id, platform: platform, webPush: app.webPush?.policy)
            }
        }
        cache.withLock { $0 = (snapshot.generation, targets) }
        return targets
    }
}
