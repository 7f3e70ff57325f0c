import HeraldCore

/// Prints the HTTP/2 request each notification would be, with the JWT's signature redacted.
/// In text, one block per notification, blocks separated by a blank line; in JSON, one object per line.
final class DryRunPrinter {
    let environment: APNSEnvironment
    let format: OutputFormat
    private var printed = 0

    init(environment: APNSEnvironment, format: OutputFormat) {
        self.environment = environment
        self.format = format
    }

    func print(_ notification: PushNotification, token: ProviderToken?) {
        // The signature stays secret even in a dry run: only header and claims are shown.
        let request = notification.request(authorization: token.map { "bearer " + $0.redacted })
        switch format {
        case .text:
            if printed > 0 { Terminal.line("") }
            Terminal.line("\(request.method) \(request.path)")
            Terminal.line(":authority: \(environment.authority)")
            for field in request.headerFields { Terminal.line("\(field.name): \(field.value)") }
            Terminal.line("")
            // The body exactly as sent; a newline after it only if it has none of its own.
            Terminal.write(bytes: request.body)
            if request.body.last != UInt8(ascii: "\n") { Terminal.line("") }
        case .json:
            var writer = JSONWriter(capacity: 256 + request.body.count)
            writer.beginObject()
            writer.key("token")
            writer.string(notification.token.hex)
            writer.key("method")
            writer.string(request.method)
            writer.key("path")
            writer.string(request.path)
            writer.key("authority")
            writer.string(environment.authority)
            writer.key("headers")
            writer.beginObject()
            for field in request.headerFields {
                writer.key(field.name)
                writer.string(field.value)
            }
            writer.endObject()
            writer.key("payload")
            writer.rawJSON(notification.payload.compactBytes)
            writer.endObject()
            Terminal.line(bytes: writer.bytes)
        }
        printed += 1
    }
}
