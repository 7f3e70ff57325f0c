/// BCP 47 language tags (RFC 5646) as templates key their variants and devices report their
/// locales: checked well-formed and written in canonical case (RFC 5646 §2.1.1: language lower
/// case, script title case, region upper case), `pt-br` as `pt-BR`, `zh-hant-tw` as `zh-Hant-TW`.
///
/// Written over the bytes by hand, without Foundation's `Locale` or a regular expression: a
/// template's variant is chosen for every device group it is sent to.
enum LanguageTag {
    /// The longest tag a variant may be keyed by, in bytes.
    static let maximumLength = 35

    /// `text` in canonical case, or `nil` when it is not a well-formed tag: subtags of 1 to 8
    /// ASCII letters or digits joined by `-`, the first of 2 or 3 letters, at most
    /// ``maximumLength`` bytes. After a singleton (`-u-`, `-x-`) every subtag is lower case.
    static func canonical(_ text: String) -> String? {
        guard text.utf8.count <= maximumLength else { return nil }
        return canonical(text.utf8, locale: false)
    }

    /// A device's locale as a tag to look a variant up by: Android's and Apple's `pt_BR` as
    /// `pt-BR`, without what follows an `@` (`en_US@calendar=gregorian`), a `.` (POSIX
    /// `en_US.UTF-8`) or a singleton (a `-u-nu-latn` extension, a `-x-` private use); `nil` when
    /// what is left is not a well-formed tag.
    static func canonical(locale: String) -> String? {
        canonical(locale.utf8, locale: true)
    }

    private static func canonical(_ bytes: String.UTF8View, locale: Bool) -> String? {
        var result: [UInt8] = []
        result.reserveCapacity(min(bytes.count, maximumLength))
        var start = 0  // the current subtag's first byte in `result`
        var position = 0  // which subtag it is
        var letters = true  // whether it is letters only
        var extensions = false  // after a singleton
        var iterator = bytes.makeIterator()
        while true {
            let next = iterator.next()
            var byte = next ?? UInt8(ascii: "-")
            var last = next == nil
            if locale {
                switch byte {
                case UInt8(ascii: "_"): byte = UInt8(ascii: "-")
                case UInt8(ascii: "@"), UInt8(ascii: "."): (byte, last) = (UInt8(ascii: "-"), true)
                default: break
                }
            }
            guard byte == UInt8(ascii: "-") else {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"): result.append(byte)
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): result.append(byte + 32)
                case UInt8(ascii: "0")...UInt8(ascii: "9"): result.append(byte); letters = false
                default: return nil
                }
                // A locale is cut at its extensions, which may run long: what comes before them is bounded.
                guard result.count <= maximumLength + 2 else { return nil }
                continue
            }
            let count = result.count - start
            guard (1...8).contains(count) else { return nil }
            if position == 0 {
                guard letters, count <= 3, count >= 2 else { return nil }
            } else if count == 1 {
                if locale {
                    result.removeLast(2)
                    break
                }
                extensions = true
            } else if !extensions, letters, count == 4 {
                result[start] -= 32
            } else if !extensions, letters, count == 2 {
                result[start] -= 32
                result[start + 1] -= 32
            }
            if last { break }
            result.append(UInt8(ascii: "-"))
            start = result.count
            position += 1
            letters = true
        }
        guard result.count <= maximumLength else { return nil }
        return String(decoding: result, as: UTF8.self)
    }
}
