import Hummingbird
import Logging

/// Turns every error into the API's JSON error answer (never a bare 500 for bad input) and counts
/// every answer by route template, method and status.
struct ResponseMiddleware: RouterMiddleware {
    typealias Context = GatewayContext
    let metrics: GatewayMetrics
    /// Methods counted by name; any other (clients may send any token) counts as `other`.
    static let methods: Set<String> = ["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"]

    func handle(_ request: Request, context: GatewayContext, next: (Request, GatewayContext) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            let (answer, isInternal) = APIError.from(error)
            if isInternal {
                // The error itself may hold SQL or paths: it is logged, never sent.
                context.logger.error("request failed", metadata: ["route": "\(context.endpointPath ?? "-")", "error": "\(String(describing: error))"])
            }
            response = answer.response()
        }
        // A template, never the raw path: the label set stays bounded whatever clients send.
        metrics.recordRequest(
            route: context.endpointPath ?? "unmatched", method: Self.methods.contains(request.method.rawValue) ? request.method.rawValue : "other",
            status: response.status.code, duration: ContinuousClock.now - start
        )
        context.logger.debug("answered", metadata: ["route": "\(context.endpointPath ?? "unmatched")", "status": "\(response.status.code)"])
        return response
    }
}

/// Lets a request through only with `Authorization: Bearer KEY` for a configured key.
/// Then counts the request against the key's rate (429 with `Retry-After` past it).
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = GatewayContext
    /// Whose keyring is read for each request: a reload's new keys apply at once.
    let live: LiveConfiguration
    let limiter: RateLimiter

    func handle(_ request: Request, context: GatewayContext, next: (Request, GatewayContext) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw APIError(.unauthorized, "unauthorized", "send an API key: Authorization: Bearer KEY (herald api-key makes one)")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", let key = live.snapshot.keyring.key(for: String(parts[1])) else {
            throw APIError(.unauthorized, "unauthorized", "the API key is not one this gateway knows")
        }
        if let wait = limiter.take(key.name) {
            let seconds = max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
            throw APIError.tooManyRequests(
                "this API key made more than \(Int(limiter.rate)) requests a second (\(Int(limiter.burst)) at once); retry after \(seconds) s",
                retryAfter: seconds
            )
        }
        var context = context
        context.apiKey = key
        context.logger[metadataKey: "apiKey"] = "\(key.name)"
        return try await next(request, context)
    }
}
