#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Payload {
    /// Encodes the payload as compact JSON: `aps` first with Apple's keys in the order of apns-spec
    /// §3.1, then custom keys sorted. The same payload always gives the same bytes.
    ///
    /// - Throws: ``PayloadError`` for a value JSON or APNs cannot take: a NaN or infinite number,
    ///   a negative badge, a critical-sound volume outside 0...1.
    public func encode() throws(PayloadError) -> EncodedPayload {
        var writer = JSONWriter(capacity: 256)
        try write(into: &writer)
        return EncodedPayload(unchecked: writer.bytes)
    }

    func write(into writer: inout JSONWriter) throws(PayloadError) {
        writer.beginObject()
        if let aps {
            writer.key("aps" as StaticString)
            try aps.write(into: &writer)
        }
        if !custom.isEmpty {
            for key in custom.keys.sorted() {
                let value = custom[key]!
                guard value.isEncodable else {
                    throw PayloadError(.nonFiniteNumber, "custom key '\(key)' holds NaN or infinity, which JSON cannot carry")
                }
                writer.key(key)
                writer.value(value)
            }
        }
        writer.endObject()
    }
}

extension APS {
    func write(into writer: inout JSONWriter) throws(PayloadError) {
        writer.beginObject()
        if let alert { try alert.write(into: &writer) }
        if let badge {
            guard badge >= 0 else { throw PayloadError(.outOfRange, "badge must be 0 or more (0 clears it), got \(badge)") }
            writer.key("badge" as StaticString)
            writer.int(badge)
        }
        if let sound { try sound.write(into: &writer) }
        if let threadID { writer.key("thread-id" as StaticString); writer.string(threadID) }
        if let category { writer.key("category" as StaticString); writer.string(category) }
        if contentAvailable { writer.key("content-available" as StaticString); writer.int(1) }
        if mutableContent { writer.key("mutable-content" as StaticString); writer.int(1) }
        if let targetContentID { writer.key("target-content-id" as StaticString); writer.string(targetContentID) }
        if let interruptionLevel { writer.key("interruption-level" as StaticString); writer.string(interruptionLevel.rawValue) }
        if let relevanceScore {
            guard relevanceScore.isFinite else { throw PayloadError(.nonFiniteNumber, "relevance-score must be a finite number") }
            writer.key("relevance-score" as StaticString)
            writer.double(relevanceScore)
        }
        if let filterCriteria { writer.key("filter-criteria" as StaticString); writer.string(filterCriteria) }
        if let urlArgs { writer.key("url-args" as StaticString); writer.strings(urlArgs) }
        if let timestamp { writer.key("timestamp" as StaticString); writer.int(Self.unixSeconds(timestamp)) }
        if let event { writer.key("event" as StaticString); writer.string(event.rawValue) }
        if let contentState { try Self.write(contentState, as: "content-state", into: &writer) }
        if let staleDate { writer.key("stale-date" as StaticString); writer.int(Self.unixSeconds(staleDate)) }
        if let dismissalDate { writer.key("dismissal-date" as StaticString); writer.int(Self.unixSeconds(dismissalDate)) }
        if let attributesType { writer.key("attributes-type" as StaticString); writer.string(attributesType) }
        if let attributes { try Self.write(attributes, as: "attributes", into: &writer) }
        if inputPushToken { writer.key("input-push-token" as StaticString); writer.int(1) }
        if let inputPushChannel { writer.key("input-push-channel" as StaticString); writer.string(inputPushChannel) }
        if contentChanged { writer.key("content-changed" as StaticString); writer.bool(true) }
        writer.endObject()
    }

    private static func write(_ value: JSONValue, as key: StaticString, into writer: inout JSONWriter) throws(PayloadError) {
        guard value.isEncodable else { throw PayloadError(.nonFiniteNumber, "\(key) holds NaN or infinity, which JSON cannot carry") }
        writer.key(key)
        writer.value(value)
    }

    private static func unixSeconds(_ date: Date) -> Int {
        Int(date.timeIntervalSince1970.rounded(.down))
    }
}

extension Alert {
    func write(into writer: inout JSONWriter) throws(PayloadError) {
        writer.key("alert" as StaticString)
        switch self {
        case .text(let body):
            writer.string(body)
        case .content(let content):
            try content.write(into: &writer)
        }
    }
}

extension AlertContent {
    func write(into writer: inout JSONWriter) throws(PayloadError) {
        writer.beginObject()
        if let title { title.write(as: "title", into: &writer) }
        if let subtitle { subtitle.write(as: "subtitle", into: &writer) }
        if let body { body.write(as: "body", into: &writer) }
        if let launchImage { writer.key("launch-image" as StaticString); writer.string(launchImage) }
        if let titleLocKey { writer.key("title-loc-key" as StaticString); writer.string(titleLocKey) }
        if let titleLocArgs { writer.key("title-loc-args" as StaticString); writer.strings(titleLocArgs) }
        if let subtitleLocKey { writer.key("subtitle-loc-key" as StaticString); writer.string(subtitleLocKey) }
        if let subtitleLocArgs { writer.key("subtitle-loc-args" as StaticString); writer.strings(subtitleLocArgs) }
        if let locKey { writer.key("loc-key" as StaticString); writer.string(locKey) }
        if let locArgs { writer.key("loc-args" as StaticString); writer.strings(locArgs) }
        if let actionLocKey { writer.key("action-loc-key" as StaticString); writer.string(actionLocKey) }
        if let summaryArg { writer.key("summary-arg" as StaticString); writer.string(summaryArg) }
        if let summaryArgCount { writer.key("summary-arg-count" as StaticString); writer.int(summaryArgCount) }
        if let action { writer.key("action" as StaticString); writer.string(action) }
        if let sound { try sound.write(into: &writer) }
        writer.endObject()
    }
}

extension AlertText {
    func write(as key: StaticString, into writer: inout JSONWriter) {
        writer.key(key)
        switch self {
        case .text(let text):
            writer.string(text)
        case .localized(let locKey, let arguments):
            writer.beginObject()
            writer.key("loc-key" as StaticString)
            writer.string(locKey)
            if !arguments.isEmpty {
                writer.key("loc-args" as StaticString)
                writer.strings(arguments)
            }
            writer.endObject()
        }
    }
}

extension Sound {
    func write(into writer: inout JSONWriter) throws(PayloadError) {
        writer.key("sound" as StaticString)
        switch self {
        case .named(let name):
            writer.string(name)
        case .critical(let sound):
            writer.beginObject()
            writer.key("critical" as StaticString)
            writer.int(sound.critical ? 1 : 0)
            writer.key("name" as StaticString)
            writer.string(sound.name)
            if let volume = sound.volume {
                guard volume.isFinite, (0...1).contains(volume) else {
                    throw PayloadError(.outOfRange, "sound volume must be between 0.0 and 1.0, got \(volume)")
                }
                writer.key("volume" as StaticString)
                writer.double(volume)
            }
            writer.endObject()
        }
    }
}
