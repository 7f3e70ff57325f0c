import Crypto
import HeraldCore
import HeraldStore
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a claimed batch becomes before any platform sees it, the same for every platform: the
/// devices its category's preferences and caps keep from it, ended as skipped; and the others
/// in parts, one per rendering of its template (a language, or a user with data of their own or
/// a digest), each part a batch of its own with that payload.
struct BatchPreparation {
    /// The batches to send: the claimed one itself when the notification asks for nothing.
    var parts: [WorkBatch]
    /// The devices that are not sent, with their outcome (skipped, or failed to render).
    var outcomes: [DeliveryOutcome]

    /// The batch as it is: nothing to screen or render.
    init(unchanged batch: WorkBatch) {
        parts = [batch]
        outcomes = []
    }

    init(parts: [WorkBatch], outcomes: [DeliveryOutcome]) {
        self.parts = parts
        self.outcomes = outcomes
    }

    /// Screens and renders `batch` for `app`. A store that cannot screen it throws: the caller
    /// retries the batch.
    static func prepare(_ batch: WorkBatch, app: GatewayConfiguration.App, store: HeraldStore, logger: Logger) async throws -> BatchPreparation {
        guard let content = batch.notification.content else { return BatchPreparation(unchanged: batch) }
        var rules: ScreeningRules?
        if let name = content.category {
            if let category = app.categories[name] {
                rules = category.rules(name: name, critical: content.critical)
            } else {
                // The configuration dropped the category since the notification was queued: it goes
                // as a notification without one.
                logger.warning("a notification's category is no longer the app's; sending it unscreened", metadata: ["category": "\(name)"])
            }
        }
        // Nothing to screen or render (a transactional category, a category the configuration
        // dropped): the batch goes as it is, without a read.
        if content.template == nil, content.digest == nil, rules.map({ $0.caps.isEmpty && !$0.honorsPreferences }) ?? true {
            return BatchPreparation(unchanged: batch)
        }
        let screening = try await store.screen(batch, rules: rules)
        var outcomes: [DeliveryOutcome] = []
        var kept: [WorkItem] = []
        kept.reserveCapacity(batch.items.count)
        for item in batch.items {
            if let skip = screening.skipped[item.token] {
                outcomes.append(DeliveryOutcome(token: item.token, result: .skipped(skip)))
            } else {
                kept.append(item)
            }
        }
        var base = batch
        if let digest = content.digest, base.notification.collapseID == nil {
            // A later digest replaces an earlier one on the device: APNs's apns-collapse-id, a
            // Web Push Topic and FCM's collapse_key all come from the key (at most 64 bytes, as
            // apns-collapse-id allows).
            base.notification.collapseID = Self.collapseID(forDigestKey: digest.key)
        }
        guard let use = content.template else {
            base.items = kept
            return BatchPreparation(parts: kept.isEmpty ? [] : [base], outcomes: outcomes)
        }
        let template: NotificationTemplate
        do {
            template = try NotificationTemplate.parse(JSONValue(parsing: use.body))
        } catch {
            logger.error("a notification's stored template cannot be read; its devices fail", metadata: ["template": "\(use.name)", "error": "\(error)"])
            return BatchPreparation(parts: [], outcomes: outcomes + kept.map { DeliveryOutcome(token: $0.token, result: .failed(reason: .gateway(.templateFailed))) })
        }
        let shared = use.data.flatMap { try? JSONValue(parsing: $0) }?.objectValue ?? [:]
        let byUser = use.dataByUser.flatMap { try? JSONValue(parsing: $0) }?.objectValue ?? [:]
        // One rendering per language and, for users with data of their own or a digest, per user.
        struct Key: Hashable {
            var language: String
            var user: String?
        }
        var groups: [Key: [WorkItem]] = [:]
        var order: [Key] = []
        // A batch's devices have a few locales between them: each is matched to a variant once.
        var languages: [String: String] = [:]
        let fallback = template.language(for: nil, appLanguage: app.defaultLanguage)
        for item in kept {
            let traits = screening.traits[item.token]
            let language: String
            if let locale = traits?.locale {
                if let known = languages[locale] {
                    language = known
                } else {
                    language = template.language(for: locale, appLanguage: app.defaultLanguage)
                    languages[locale] = language
                }
            } else {
                language = fallback
            }
            let user = traits?.user.flatMap { byUser[$0] != nil || screening.digests[$0] != nil ? $0 : nil }
            let key = Key(language: language, user: user)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(item)
        }
        var parts: [WorkBatch] = []
        for key in order {
            let items = groups[key] ?? []
            var variables = shared
            if let user = key.user {
                for (name, value) in byUser[user]?.objectValue ?? [:] { variables[name] = value }
                if let summary = screening.digests[user] {
                    variables["count"] = .int(summary.count)
                    variables["items"] = .array(summary.items.map { .string($0) })
                }
            }
            do {
                let rendered = try template.render(
                    locale: key.language, appLanguage: nil, variables: variables, payload: base.notification.payload,
                    platformOptions: base.notification.platformOptions)
                var part = base
                part.notification.payload = rendered.payload
                part.notification.platformOptions = rendered.platformOptions
                part.items = items
                parts.append(part)
            } catch {
                logger.warning(
                    "a template does not render for some devices; they fail",
                    metadata: ["template": "\(use.name)", "language": "\(key.language)", "devices": "\(items.count)", "error": "\(error)"])
                outcomes += items.map { DeliveryOutcome(token: $0.token, result: .failed(reason: .gateway(.templateFailed))) }
            }
        }
        return BatchPreparation(parts: parts, outcomes: outcomes)
    }

    /// A digest key as a collapse ID: itself when it fits apns-collapse-id's 64 bytes, else a
    /// digest of it that does.
    static func collapseID(forDigestKey key: String) -> String {
        if key.utf8.count <= 64 { return key }
        let hex = SHA256.hash(data: Array(key.utf8)).map { byte in byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
        return "d-" + hex.prefix(62)
    }
}
