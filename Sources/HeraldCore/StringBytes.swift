extension StringProtocol {
    /// Whether any of the string's UTF-8 bytes satisfies `predicate`: one pass over its own
    /// storage where it has one (a native `String`), not the view's index walk. The checks that
    /// run for every notification (a collapse ID's controls, text a peer sent) read their bytes
    /// this way.
    package func containsUTF8Byte(where predicate: (UInt8) -> Bool) -> Bool {
        utf8.withContiguousStorageIfAvailable { $0.contains(where: predicate) } ?? utf8.contains(where: predicate)
    }
}

extension String {
    /// Whether the string's UTF-8 bytes end with `suffix`'s. `hasSuffix` compares characters,
    /// under Unicode's canonical equivalence; an APNs topic is compared byte for byte, and this
    /// is the check every notification's topic gets (``PushType/validate(topic:)``).
    package func hasUTF8Suffix(_ suffix: String) -> Bool {
        // Over both strings' own storage where they have it (native strings): the view's
        // `suffix` walk retained and released the string, for each suffix a topic is checked against.
        let compared = utf8.withContiguousStorageIfAvailable { bytes in
            suffix.utf8.withContiguousStorageIfAvailable { tail in
                tail.count <= bytes.count && UnsafeBufferPointer(rebasing: bytes[(bytes.count - tail.count)...]).elementsEqual(tail)
            }
        }
        if let compared = compared ?? nil { return compared }
        let count = suffix.utf8.count
        guard count <= utf8.count else { return false }
        return utf8.suffix(count).elementsEqual(suffix.utf8)
    }
}
