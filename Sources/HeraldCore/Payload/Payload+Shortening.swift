extension Payload {
    /// The ellipsis that ends a shortened body.
    public static let ellipsis = "…"

    /// Encodes the payload so that it fits in `limit` bytes, shortening the alert body if needed.
    ///
    /// The body is cut between characters (never inside a UTF-8 sequence or a grapheme cluster),
    /// white space at the cut is dropped, and it ends in "…". Everything else, custom keys
    /// included, is kept as it is. A payload that already fits is returned unchanged.
    ///
    /// - Parameter limit: the byte limit, e.g. ``PushType/maximumPayloadSize`` or 256 for the
    ///   legacy binary commands 0 and 1.
    /// - Throws: ``APNSError`` `PayloadTooLarge` when even an empty body would not fit or there is
    ///   no plain-text body to shorten; ``PayloadError`` when the payload cannot be encoded at all.
    public func encode(fittingIn limit: Int) throws -> EncodedPayload {
        let encoded = try encode()
        if encoded.count <= limit { return encoded }
        guard let body = alertBody else {
            throw APNSError(
                local: .payloadTooLarge,
                "payload is \(encoded.count) bytes, over the limit of \(limit), and has no plain-text alert body to shorten"
            )
        }
        let characters = Array(body)
        func candidate(keeping count: Int) throws -> EncodedPayload {
            var kept = String(characters[..<count])
            while let last = kept.last, last.isWhitespace { kept.removeLast() }
            var shortened = self
            shortened.replaceAlertBody(with: kept + Self.ellipsis)
            return try shortened.encode()
        }
        // The encoded size grows with the number of characters kept: binary search the largest
        // prefix that fits.
        var best = try candidate(keeping: 0)
        guard best.count <= limit else {
            throw APNSError(
                local: .payloadTooLarge,
                "payload is \(best.count) bytes even with the alert body cut to '\(Self.ellipsis)'; the limit is \(limit)"
            )
        }
        var low = 1
        var high = characters.count - 1
        while low <= high {
            let middle = (low + high) / 2
            let attempt = try candidate(keeping: middle)
            if attempt.count <= limit {
                best = attempt
                low = middle + 1
            } else {
                high = middle - 1
            }
        }
        return best
    }

    /// The plain-text alert body, if there is one to shorten.
    private var alertBody: String? {
        switch aps?.alert {
        case .text(let body): body
        case .content(let content):
            if case .text(let body) = content.body { body } else { nil }
        case nil: nil
        }
    }

    private mutating func replaceAlertBody(with body: String) {
        switch aps?.alert {
        case .text: aps?.alert = .text(body)
        case .content(var content):
            content.body = .text(body)
            aps?.alert = .content(content)
        case nil: break
        }
    }
}
