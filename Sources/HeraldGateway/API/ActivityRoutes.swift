import HeraldCore
import HeraldStore
import Hummingbird

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `/v1/apps/{app}/activities…`: Live Activities end to end. Start one on push-to-start tokens,
/// record the update tokens the app reports for it, send it updates and an end; after the end it
/// takes no more events (409), and its tokens are forgotten after its dismissal date.
struct ActivityRoutes {
    let api: GatewayAPI

    func add(to group: RouterGroup<GatewayContext>) {
        group.post("apps/:app/activities", use: start)
        group.get("apps/:app/activities/:activity", use: read)
        group.put("apps/:app/activities/:activity/tokens/:token", use: registerToken)
        group.delete("apps/:app/activities/:activity/tokens/:token", use: deleteToken)
        group.post("apps/:app/activities/:activity/events", use: event)
    }

    @Sendable func start(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let topic = try api.apnsTopic(of: appID)
        try NotificationRoutes.checkBacklog(of: appID, api: api)
        let fields = try await JSONBody.object(of: request, limit: api.configuration.limits.maximumBodySize)
        // One time for the payload's timestamp and the notification's createdAt.
        let now = Date()
        let start = try ActivityBody.start(fields, app: api.configuration.app(appID)!, topic: topic, limits: api.configuration.limits, now: now)
        return try await NotificationRoutes.queue(start, api: api, context: context, now: now)
    }

    @Sendable func event(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let activityID = try Self.activityID(context)
        let topic = try api.apnsTopic(of: appID)
        try NotificationRoutes.checkBacklog(of: appID, api: api)
        let fields = try await JSONBody.object(of: request, limit: api.configuration.limits.maximumBodySize)
        let now = Date()
        let event = try ActivityBody.event(fields, activityID: activityID, app: api.configuration.app(appID)!, topic: topic, now: now)
        return try await NotificationRoutes.queue(event, api: api, context: context, now: now)
    }

    @Sendable func read(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let activityID = try Self.activityID(context)
        guard let activity = try await api.store.activity(app: appID, id: activityID) else {
            throw APIError.notFound("no Live Activity \(activityID) in app \(appID)")
        }
        let defaultEnvironment = api.defaultEnvironment(of: appID)
        return JSONBody.object { writer in
            writer.member("id", activity.id)
            writer.member("state", activity.state.rawValue)
            writer.member("createdAt", activity.createdAt)
            writer.member("endedAt", activity.endedAt)
            writer.member("dismissalAt", activity.dismissalAt)
            writer.key("tokens")
            writer.beginArray()
            for token in activity.tokens {
                writer.beginObject()
                Self.write(token, defaultEnvironment: defaultEnvironment, to: &writer)
                writer.endObject()
            }
            writer.endArray()
        }
    }

    @Sendable func registerToken(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let activityID = try Self.activityID(context)
        let token = try context.parameters.require("token")
        var user: String?
        var environment: TokenEnvironment?
        if let fields = try await JSONBody.optionalObject(of: request, limit: api.configuration.limits.maximumBodySize) {
            do throws(FieldError) {
                try fields.only(["user", "environment"])
                user = try fields.string("user")
                environment = try fields.environment("environment")
            } catch {
                throw error.apiError
            }
        }
        let (stored, created) = try await api.store.registerActivityToken(app: appID, activityID: activityID, token: token, user: user, environment: environment)
        let defaultEnvironment = api.defaultEnvironment(of: appID)
        return JSONBody.object(created ? .created : .ok) { Self.write(stored, defaultEnvironment: defaultEnvironment, to: &$0) }
    }

    @Sendable func deleteToken(request: Request, context: GatewayContext) async throws -> Response {
        let appID = try api.authorizedApp(context)
        let activityID = try Self.activityID(context)
        let token = try DeviceRoutes.token(context)
        guard try await api.store.deleteActivityToken(app: appID, activityID: activityID, token: token) else {
            throw APIError.notFound("Live Activity \(activityID) has no update token \(token)")
        }
        return Response(status: .noContent)
    }

    static func activityID(_ context: GatewayContext) throws -> String {
        let id = try context.parameters.require("activity")
        guard LiveActivity.isValidID(id) else {
            throw APIError.invalid("activity ID: 1 to \(LiveActivity.maximumIDLength) of A-Z a-z 0-9 - _ . : (ActivityKit's Activity.id)")
        }
        return id
    }

    static func write(_ token: ActivityToken, defaultEnvironment: TokenEnvironment, to writer: inout JSONWriter) {
        writer.member("token", token.token)
        writer.member("user", token.user)
        writer.member("environment", (token.environment ?? defaultEnvironment).rawValue)
        writer.member("createdAt", token.createdAt)
        writer.member("updatedAt", token.updatedAt)
    }
}
