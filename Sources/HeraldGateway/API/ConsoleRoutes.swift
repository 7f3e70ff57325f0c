import HTTPTypes
import Hummingbird
import NIOCore

/// `/console`: the operator's console, one page and its script and style, compiled into the
/// binary (nothing is fetched from elsewhere: it works offline). The files need no key; the page
/// asks for one and calls `/v1` with it, keeping it in `sessionStorage` only.
///
/// Every answer forbids what the page never needs: scripts, styles and requests from anywhere
/// but this origin, inline script, framing by another page (clickjacking), MIME sniffing, and a
/// referrer leaving the page.
struct ConsoleRoutes {
    /// The console's Content-Security-Policy: its own files only, no inline script or style.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

    func add(to router: Router<GatewayContext>) {
        let page = Self.file(PackageResources.index_html, type: "text/html; charset=utf-8")
        let script = Self.file(PackageResources.console_js, type: "text/javascript; charset=utf-8")
        let style = Self.file(PackageResources.console_css, type: "text/css; charset=utf-8")
        router.get("console") { _, _ in page() }
        router.get("console/console.js") { _, _ in script() }
        router.get("console/console.css") { _, _ in style() }
    }

    /// An answer with `bytes`, made once; each request gets a response over the same buffer.
    static func file(_ bytes: [UInt8], type: String) -> @Sendable () -> Response {
        let buffer = ByteBuffer(bytes: bytes)
        return {
            var headers = HTTPFields()
            headers[.contentType] = type
            headers[.contentSecurityPolicy] = contentSecurityPolicy
            headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
            headers[.xContentTypeOptions] = "nosniff"
            headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
            // A new Herald's console replaces the old at once.
            headers[.cacheControl] = "no-cache"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: buffer))
        }
    }
}
