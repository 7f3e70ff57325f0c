import HeraldCore
import HeraldStore

/// One of an app's kinds of notification (`categories` in its entry): whether users may opt out
/// of it, whether they must opt in, and how many of it one user may get in a window.
///
/// `{"orders": {"transactional": true}, "marketing": {"commercial": true, "optIn": false,
/// "caps": [{"count": 1, "windowSeconds": 600}, {"count": 3, "windowSeconds": 86400}]}}`
public struct NotificationCategory: Sendable, Hashable {
    /// What a user needs and cannot opt out of (an order shipped, a sign-in code): no
    /// preference and no cap applies.
    public var transactional: Bool
    /// Promotional: users may opt out, or must opt in (``optIn``).
    public var commercial: Bool
    /// A user receives it only after opting in (a commercial category's consent, as some
    /// jurisdictions require); otherwise until opting out.
    public var optIn: Bool
    /// At most so many per user in each window; none: no cap.
    public var caps: [FrequencyCap]

    /// The most categories an app may have, and caps a category may have.
    public static let maximumCount = 64
    public static let maximumCaps = 8

    public init(transactional: Bool = false, commercial: Bool = false, optIn: Bool = false, caps: [FrequencyCap] = []) {
        self.transactional = transactional
        self.commercial = commercial
        self.optIn = optIn
        self.caps = caps
    }

    /// How a batch of a notification in this category is screened.
    func rules(name: String, critical: Bool) -> ScreeningRules {
        ScreeningRules(category: name, receivesByDefault: !optIn, honorsPreferences: !transactional, caps: transactional || critical ? [] : caps)
    }

    /// An app's `categories` object.
    static func parse(_ fields: JSONFields, maximumWindowSeconds: Int) throws(FieldError) -> [String: NotificationCategory] {
        guard fields.members.count <= maximumCount else { throw FieldError(fields.path, "at most \(maximumCount) categories") }
        var categories: [String: NotificationCategory] = [:]
        for name in fields.members.keys.sorted() {
            guard DeviceRegistration.isCategoryName(name) else {
                throw FieldError(fields.at(String(describing: PeerText(name, limit: 80))), "a category name is 1 to 64 of a-z 0-9 _ -")
            }
            guard let entry = try fields.object(name) else { throw FieldError(fields.at(name), "must be an object ({\"transactional\": true} or {\"commercial\": true, …})") }
            try entry.only(["transactional", "commercial", "optIn", "caps"])
            var category = NotificationCategory(
                transactional: try entry.bool("transactional") ?? false, commercial: try entry.bool("commercial") ?? false, optIn: try entry.bool("optIn") ?? false)
            guard !(category.transactional && category.commercial) else {
                throw FieldError(entry.path, "is either transactional or commercial, not both")
            }
            if category.transactional, category.optIn { throw FieldError(entry.at("optIn"), "a transactional category goes to everyone; it has no opt-in") }
            let caps = try entry.objects("caps")
            if category.transactional, !caps.isEmpty { throw FieldError(entry.at("caps"), "a transactional category is never capped") }
            guard caps.count <= maximumCaps else { throw FieldError(entry.at("caps"), "at most \(maximumCaps) caps") }
            for cap in caps {
                try cap.only(["count", "windowSeconds"])
                guard let count = try cap.int("count") else { throw FieldError(cap.at("count"), "is required: how many in the window") }
                guard count >= 1, count <= 10_000 else { throw FieldError(cap.at("count"), "must be 1 to 10000 (a cap of 0 would send nothing: opt users out instead)") }
                guard let window = try cap.int("windowSeconds") else { throw FieldError(cap.at("windowSeconds"), "is required") }
                guard window >= 1, window <= maximumWindowSeconds else {
                    throw FieldError(
                        cap.at("windowSeconds"),
                        "must be 1 to \(maximumWindowSeconds): no window is longer than the queue's retention (queue.retentionSeconds), which forgets what was sent")
                }
                category.caps.append(FrequencyCap(count: count, windowSeconds: window))
            }
            categories[name] = category
        }
        return categories
    }
}
