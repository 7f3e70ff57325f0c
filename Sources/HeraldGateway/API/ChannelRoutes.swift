import HeraldAPNS
import HeraldCore
import HeraldStore
import Hummingbird

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `/v1/apps/{app}/channels…`: iOS 18 broadcast channels (apns-spec §1.9). A channel is created
/// and deleted at APNs through its channel-management API and kept in the store; an event sent to
/// one is a single request to APNs however many Live Activities listen, sent at once (not queued),
/// its answer APNs's.
struct ChannelRoutes {
    let api: GatewayAPI

    func add(to group: RouterGroup<GatewayContext>) {
        group.post("apps/:app/channels", use: create)
        group.get("apps/:app/channels", use: list)
        group.delete("apps/:app/channels/:channel", use: delete)
        group.post("apps/:app/channels/:channel/events", use: event)
    }

    @Sendable func create(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let fields = try await JSONBody.object(of: request, limit: api.configuration.limits.maximumBodySize)
        var policy = ChannelStoragePolicy.noStorage
        var environment = api.defaultEnvironment(of: appID)
        do throws(FieldError) {
            try fields.only(["storagePolicy", "environment"])
            switch try fields.string("storagePolicy") {
            case "none"?: policy = .noStorage
            case "mostRecent"?: policy = .mostRecentMessage
            case nil: throw FieldError("storagePolicy", "is required: none, or mostRecent (APNs keeps the last message, up to 8 h, for devices offline)")
            default: throw FieldError("storagePolicy", "must be none or mostRecent")
            }
            environment = try fields.environment("environment") ?? environment
        } catch {
            throw error.apiError
        }
        let topic = try api.apnsTopic(of: appID)
        let created = try await withClients(appID, environment) { clients in
            try await Self.atAPNs { try await clients.management.createChannel(bundleID: topic, storagePolicy: policy) }
        }
        let channel = StoredChannel(app: appID, id: created.id, environment: environment, storesMostRecent: policy == .mostRecentMessage, createdAt: Date())
        try await api.store.addChannel(channel)
        context.logger.info("channel created", metadata: ["app": "\(appID)", "channel": "\(channel.id)", "environment": "\(environment)"])
        return JSONBody.object(.created) { Self.write(channel, to: &$0) }
    }

    @Sendable func list(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let channels = try await api.store.channels(app: appID)
        return JSONBody.object { writer in
            writer.key("channels")
            writer.beginArray()
            for channel in channels {
                writer.beginObject()
                Self.write(channel, to: &writer)
                writer.endObject()
            }
            writer.endArray()
        }
    }

    @Sendable func delete(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let channel = try await storedChannel(appID, context)
        let topic = try api.apnsTopic(of: appID)
        do {
            try await withClients(appID, channel.environment) { clients in
                try await Self.atAPNs { try await clients.management.deleteChannel(channel.id, bundleID: topic) }
            }
        } catch let error as APIError where [APNSReason.channelNotRegistered.rawValue, APNSReason.badChannelId.rawValue].contains(error.code) {
            // Gone at APNs already: forgotten here too.
        }
        _ = try await api.store.deleteChannel(app: appID, id: channel.id)
        return Response(status: .noContent)
    }

    @Sendable func event(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let channel = try await storedChannel(appID, context)
        let fields = try await JSONBody.object(of: request, limit: api.configuration.limits.maximumBodySize)
        let broadcast = try ActivityBody.broadcast(fields, channel: channel, topic: try api.apnsTopic(of: appID), now: Date())
        let sent = try await withClients(appID, channel.environment) { clients in
            try await Self.atAPNs { try await clients.broadcast.send(broadcast) }
        }
        return JSONBody.object { writer in
            writer.member("channel", channel.id)
            writer.member("requestID", sent.requestID)
        }
    }

    /// The channel named in the path, if this app has it.
    private func storedChannel(_ appID: String, _ context: GatewayContext) async throws -> StoredChannel {
        // Base64 has / and +: a path carries them percent-encoded, and the router does not decode.
        let raw = try context.parameters.require("channel")
        guard let id = raw.removingPercentEncoding, StoredChannel.isValidID(id) else {
            throw APIError.invalid("channel ID: 1 to \(StoredChannel.maximumIDLength) base64 characters, as POST /v1/apps/{app}/channels answered (percent-encode / and +)")
        }
        guard let channel = try await api.store.channel(app: appID, id: id) else {
            throw APIError.notFound("app \(appID) has no channel \(id)")
        }
        return channel
    }

    /// Runs `body` with the channel clients of an app's environment, made on first use (a reload
    /// meanwhile leaves them to this request).
    private func withClients<Result: Sendable>(
        _ appID: String, _ environment: TokenEnvironment, _ body: ((management: APNSClient, broadcast: APNSClient)) async throws -> Result
    ) async throws -> Result {
        let snapshot = api.live.snapshot
        guard let app = snapshot.configuration.app(appID),
            let result = try await snapshot.clients.withChannelClients(app: app, environment: environment, body)
        else {
            throw APIError(.serviceUnavailable, "unavailable", "this process has no APNs clients for channels")
        }
        return result
    }

    /// Runs a request to APNs; a refusal or a failure is answered 502 with APNs's reason as the code.
    static func atAPNs<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as APNSError {
            throw APIError(.badGateway, error.reason.rawValue, "APNs refused it: \(error.reason.rawValue)\(error.detail.map { " (\($0))" } ?? "")")
        } catch let error as APNSClientError {
            throw APIError(.badGateway, "apnsUnavailable", "APNs could not be reached: \(error.code)")
        }
    }

    static func write(_ channel: StoredChannel, to writer: inout JSONWriter) {
        writer.member("id", channel.id)
        writer.member("storagePolicy", channel.storesMostRecent ? "mostRecent" : "none")
        writer.member("environment", channel.environment.rawValue)
        writer.member("createdAt", channel.createdAt)
    }
}
