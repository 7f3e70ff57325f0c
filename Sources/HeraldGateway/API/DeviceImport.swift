import HeraldCore
import HeraldStore
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// The devices of a bulk import, read from the request body as the store asks for them: a
/// million lines are never held at once. A device that cannot be registered is reported with its
/// line and skipped; the others go on.
struct DeviceImport: AsyncSequence {
    typealias Element = DeviceRegistration
    typealias Format = ElementSplitter.Format

    /// What went wrong, line by line (the first ``maximumErrors`` kept, all counted).
    final class Report: Sendable {
        struct Failure: Sendable, Hashable {
            var line: Int
            var message: String
        }

        let maximumErrors: Int
        private let state = NIOLockedValueBox<(kept: [Failure], count: Int, stoppedAtLimit: Bool)>(([], 0, false))

        init(maximumErrors: Int) {
            self.maximumErrors = maximumErrors
        }

        func record(line: Int, _ message: String) {
            state.withLockedValue { state in
                state.count += 1
                if state.kept.count < maximumErrors { state.kept.append(Failure(line: line, message: message)) }
            }
        }

        var errors: (kept: [Failure], count: Int) { state.withLockedValue { ($0.kept, $0.count) } }

        /// Whether reading stopped at ``DeviceImport/maximumSize``.
        var stoppedAtLimit: Bool {
            get { state.withLockedValue { $0.stoppedAtLimit } }
            set { state.withLockedValue { $0.stoppedAtLimit = newValue } }
        }
    }

    let body: RequestBody
    let format: Format
    let maximumElementSize: Int
    /// The most bytes of body read; the devices before it are registered, the rest is not read.
    let maximumSize: Int
    let report: Report
    /// The app's Web Push settings: lines with an `endpoint` are browsers' subscriptions.
    var webPush: GatewayConfiguration.WebPushSettings? = nil
    /// What the app reaches: a line for a platform it does not reach is refused.
    var reaches: Set<DevicePlatform> = [.apns]
    /// The app's categories: what a line's `preferences` may name.
    var categories: [String: NotificationCategory] = [:]

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(
            body: body.makeAsyncIterator(), splitter: ElementSplitter(format: format, maximumSize: maximumElementSize), report: report,
            remaining: maximumSize, webPush: webPush, reaches: reaches, categories: categories
        )
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var body: RequestBody.AsyncIterator
        var splitter: ElementSplitter
        let report: Report
        var items: [ElementSplitter.Item] = []
        var next = 0
        var finished = false
        var remaining: Int
        let webPush: GatewayConfiguration.WebPushSettings?
        let reaches: Set<DevicePlatform>
        let categories: [String: NotificationCategory]

        init(
            body: RequestBody.AsyncIterator, splitter: ElementSplitter, report: Report, remaining: Int, webPush: GatewayConfiguration.WebPushSettings?,
            reaches: Set<DevicePlatform>, categories: [String: NotificationCategory]
        ) {
            self.body = body
            self.splitter = splitter
            self.report = report
            self.remaining = remaining
            self.webPush = webPush
            self.reaches = reaches
            self.categories = categories
        }

        mutating func next() async throws -> DeviceRegistration? {
            while true {
                while next < items.count {
                    let item = items[next]
                    next += 1
                    switch item {
                    case .element(let number, let bytes):
                        do {
                            return try Self.registration(bytes, webPush: webPush, reaches: reaches, categories: categories)
                        } catch {
                            report.record(line: number, error.message)
                        }
                    case .failure(let number, let message):
                        report.record(line: number, message)
                    }
                }
                items.removeAll(keepingCapacity: true)
                next = 0
                if finished { return nil }
                if let buffer = try await body.next() {
                    if buffer.readableBytes > remaining {
                        // Past the limit: what was read whole up to it is registered; the
                        // element cut off there and the rest of the body are not.
                        splitter.feed(buffer.readableBytesView.prefix(remaining), into: &items)
                        remaining = 0
                        report.stoppedAtLimit = true
                        finished = true
                        continue
                    }
                    remaining -= buffer.readableBytes
                    splitter.feed(buffer.readableBytesView, into: &items)
                } else {
                    splitter.finish(into: &items)
                    finished = true
                }
            }
        }

        /// One device object: `{"token": "…", "user": "…", "tags": […], "badge": 0}`, or a
        /// browser's subscription (`{"endpoint": …, "keys": {…}, "user": …}`) when the app has
        /// `webPush` (`webPush`: its settings). A token is refused when the app does not reach its
        /// platform (`reaches`); `preferences` name the app's `categories`.
        static func registration(
            _ bytes: [UInt8], webPush: GatewayConfiguration.WebPushSettings? = nil, reaches: Set<DevicePlatform> = [.apns],
            categories: [String: NotificationCategory] = [:]
        ) throws(APIError) -> DeviceRegistration {
            let value: JSONValue
            do {
                value = try JSONValue(parsing: bytes)
            } catch {
                throw APIError.invalid("not valid JSON: \(error)")
            }
            try InputScreen.refuseNUL(in: value)
            do {
                let fields = try JSONFields(value, path: "")
                if fields.has("endpoint") {
                    guard let webPush else {
                        throw APIError.invalid("a browser's subscription (endpoint): this app has no webPush in the gateway's configuration")
                    }
                    return try WebPushRoutes.registration(fields, settings: webPush, categories: categories)
                }
                let token = try fields.requiredString("token")
                let device = try DeviceRoutes.deviceFields(fields, allowsToken: true, categories: categories)
                let platform = device.platform ?? .apns
                guard reaches.contains(platform) else {
                    throw FieldError(fields.at(device.platform == nil ? "token" : "platform"), GatewayPlatforms.conformance(of: platform).notReachedLine)
                }
                return try device.registration(token: token)
            } catch let error as FieldError {
                throw error.apiError
            } catch let error as APIError {
                throw error
            } catch let error as StoreError {
                throw APIError.invalid(error.message)
            } catch {
                throw APIError.invalid("\(error)")
            }
        }
    }
}
