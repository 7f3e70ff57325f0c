import HTTPTypes
import Hummingbird
import NIOCore

/// `/sdk`: the browser kit (docs/client-kits.md): the service-worker module a site's own service
/// worker loads with `importScripts`, and the page snippet that subscribes. Compiled into the
/// binary; no key; any origin may load them.
struct SDKRoutes {
    func add(to router: Router<GatewayContext>) {
        let worker = Self.file(PackageResources.herald_sw_js)
        let page = Self.file(PackageResources.herald_page_js)
        router.get("sdk/herald-sw.js") { _, _ in worker() }
        router.get("sdk/herald-page.js") { _, _ in page() }
    }

    static func file(_ bytes: [UInt8]) -> @Sendable () -> Response {
        let buffer = ByteBuffer(bytes: bytes)
        return {
            var headers = HTTPFields()
            // A service worker's imported scripts must be served as JavaScript (Service Workers, "importScripts").
            headers[.contentType] = "text/javascript; charset=utf-8"
            headers[.accessControlAllowOrigin] = "*"
            headers[.xContentTypeOptions] = "nosniff"
            headers[.cacheControl] = "no-cache"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: buffer))
        }
    }
}
