import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default ``HeraldTransport``: Foundation's `URLSession`, with no cookies or cache.
public final class URLSessionTransport: HeraldTransport {
    private let session: URLSession
    private let ownsSession: Bool

    /// A transport on an ephemeral session of its own, giving up on a request after `timeout`.
    public init(timeout: Duration = .seconds(30)) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout.timeInterval
        configuration.timeoutIntervalForResource = timeout.timeInterval
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
        ownsSession = true
    }

    /// A transport on the app's `session` (which the app invalidates).
    public init(session: URLSession) {
        self.session = session
        ownsSession = false
    }

    deinit {
        if ownsSession { session.finishTasksAndInvalidate() }
    }

    /// Sends `request`; throws ``HeraldDeviceError/Code/transport`` when no answer came, and
    /// `CancellationError` when the task was cancelled.
    public func send(_ request: HeraldRequest) async throws -> HeraldResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch {
            if Task.isCancelled || (error as? URLError)?.code == .cancelled { throw CancellationError() }
            throw HeraldDeviceError(.transport, detail: "\(request.method.rawValue) \(request.url.absoluteString): \(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw HeraldDeviceError(.transport, detail: "\(request.url.absoluteString) did not answer with HTTP")
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return HeraldResponse(status: http.statusCode, headers: headers, body: data)
    }
}
