import HeraldCore

/// A notification's options for each platform (``NotificationRequest/platformOptions``) as its
/// one column holds them: a JSON object from each platform's name to its options' text, kept as
/// a string so the bytes come back as they went in (`{"webpush":"{\"navigate\":…}"}`). A
/// platform more needs no column of its own.
enum PlatformOptions {
    /// The stored form; `nil` when no platform has options.
    static func encode(_ options: [DevicePlatform: [UInt8]]) -> String? {
        guard !options.isEmpty else { return nil }
        return JSONValue.object(Dictionary(uniqueKeysWithValues: options.map { ($0.key.rawValue, .string(String(decoding: $0.value, as: UTF8.self))) })).jsonString
    }

    /// From the stored form: a platform this Herald does not know (a newer one's) is left out.
    static func decode(_ stored: String?) -> [DevicePlatform: [UInt8]] {
        guard let stored, let members = (try? JSONValue(parsing: stored))?.objectValue else { return [:] }
        var options: [DevicePlatform: [UInt8]] = [:]
        for (name, value) in members {
            guard let platform = DevicePlatform(rawValue: name), let text = value.stringValue else { continue }
            options[platform] = Array(text.utf8)
        }
        return options
    }
}
