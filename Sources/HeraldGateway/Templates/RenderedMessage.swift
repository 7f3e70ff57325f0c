import HeraldStore

/// A notification made from a template for one language: the APNs payload and each platform's
/// options, as a ``NotificationRequest`` keeps them, and the variant it was made from.
struct RenderedMessage: Sendable, Hashable {
    /// The APNs payload: the notification's own with `aps.alert` and the template's `data` filled in.
    var payload: [UInt8]
    /// The notification's options with the variant's `navigate` (Web Push) and `clickAction`
    /// (FCM) set, as ``PlatformOptionsHolder`` reads them.
    var platformOptions: [DevicePlatform: [UInt8]]
    /// The variant's language tag, in canonical form (`pt-BR`).
    var language: String
}
