import HeraldCore
import HeraldStore
import HeraldWebPush
import Hummingbird

/// `/v1/apps/{app}/webpush/subscriptions`: a browser's push subscription registers as a device
/// of the app (docs/webpush.md). It is then read, listed and forgotten as devices are, under its
/// ID, and `alert` notifications to its user, tags or `all` reach it beside the user's iPhone.
struct WebPushRoutes {
    let api: GatewayAPI

    func add(to group: RouterGroup<GatewayContext>) {
        group.post("apps/:app/webpush/subscriptions", use: subscribe)
    }

    /// Exactly what a page's `subscription.toJSON()` gives (`endpoint`, `expirationTime`,
    /// `keys.p256dh`, `keys.auth`), plus `user` and `tags` as for devices. 201 when new, 200
    /// when the endpoint was known (its keys, user and tags refreshed).
    @Sendable func subscribe(request: Request, context: GatewayContext) async throws -> Response {
        let app = try api.authorizedApp(context)
        try api.checkReaches(app, .webpush)
        guard let settings = api.configuration.app(app)?.webPush else { throw APIError.notFound("no app '\(app)'") }
        let fields = try await JSONBody.object(of: request, limit: api.configuration.limits.maximumBodySize)
        let registration: DeviceRegistration
        do throws(FieldError) {
            registration = try Self.registration(fields, settings: settings, categories: api.configuration.app(app)?.categories ?? [:])
        } catch {
            throw error.apiError
        }
        let (device, created) = try await api.store.register(registration, app: app)
        let defaultEnvironment = api.defaultEnvironment(of: app)
        return JSONBody.object(created ? .created : .ok) { DeviceRoutes.write(device, defaultEnvironment: defaultEnvironment, to: &$0) }
    }

    /// A subscription object (`endpoint`, `expirationTime`, `keys`, `user`, `tags`, `timeZone`,
    /// `locale`, `preferences` of the app's `categories`) as a device registration, checked: the
    /// error names the field. The bulk import reads its lines with `endpoint` this way too.
    static func registration(
        _ fields: JSONFields, settings: GatewayConfiguration.WebPushSettings, categories: [String: NotificationCategory]
    ) throws(FieldError) -> DeviceRegistration {
        try fields.only(["endpoint", "expirationTime", "keys", "user", "tags", "timeZone", "locale", "preferences"])
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(json: .object(fields.members), policy: settings.policy)
        } catch {
            // The message names the field: "keys.auth: must be 16 bytes; this one is 15".
            throw FieldError(fields.path, error.message)
        }
        let user: String?? = fields.has("user") ? .some(try fields.string("user")) : nil
        let tags = try fields.strings("tags").map(Set.init)
        let timeZone = try fields.timeZone("timeZone")
        let locale = try DeviceRoutes.locale(fields)
        let preferences = try DeviceRoutes.preferences(fields, categories: categories)
        do {
            let address = try WebPushAddress(
                endpoint: subscription.endpoint.absoluteString, p256dh: Base64URL.encode(subscription.p256dh), auth: Base64URL.encode(subscription.authSecret))
            var registration = try DeviceRegistration(webPush: address, user: user, tags: tags)
            try registration.setTimeZone(timeZone)
            try registration.setLocale(locale)
            try registration.setPreferences(preferences)
            return registration
        } catch {
            throw FieldError(fields.path, error.message)
        }
    }
}
