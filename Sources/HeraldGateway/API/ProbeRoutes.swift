import Hummingbird
import NIOCore

/// `/healthz`, `/readyz`, `/metrics` and `/openapi.json`: for probes, scrapers and people, with no
/// API key.
struct ProbeRoutes {
    let api: GatewayAPI

    func add(to router: Router<GatewayContext>) {
        router.get("healthz") { _, _ in
            JSONBody.object { $0.member("status", "ok") }
        }
        router.get("readyz") { _, _ in
            // Ready when the database answers and is migrated to this Herald's schema.
            try await api.store.checkReady()
            return JSONBody.object { $0.member("status", "ready") }
        }
        router.get("metrics") { _, _ in
            // No query here: the queue's gauges are refreshed by the gateway's housekeeping at a
            // fixed interval, so a scrape flood costs the database nothing.
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: api.metrics.exposition())))
        }
        router.get("openapi.json") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.bytes)))
        }
    }
}

/// The API's OpenAPI 3 document, `Sources/HeraldGateway/OpenAPI/openapi.json`, compiled in.
public enum OpenAPIDocument {
    public static var bytes: [UInt8] { PackageResources.openapi_json }
}
