import Hummingbird
import NIOCore
import NIOHPACK

/// Hummingbird's side of a mock (HTTP/1.1): reads the body within the route's bound, and asks
/// the mock's ``MockHTTPHandler``, as the HTTP/2 path does.
struct MockHTTPResponder: HTTPResponder {
    typealias Context = MockHTTPContext

    let handler: any MockHTTPHandler

    func respond(to request: Request, context: MockHTTPContext) async throws -> Response {
        let method = request.method.rawValue
        let path = request.uri.path
        let body: MockHTTPBody
        do {
            body = .bytes(try await request.collectBody(limit: handler.maximumBodyCount(method: method, path: path)))
        } catch .tooLarge {
            body = .tooLarge
        } catch {
            body = .unreadable
        }
        var headers = HPACKHeaders()
        for field in request.headers { headers.add(name: field.name.canonicalName, value: field.value) }
        let exchange = MockHTTPRequest(method: method, path: Substring(path), headers: headers, body: body, httpVersion: context.httpVersion)
        let answer: MockHTTPResponse
        switch handler.respond(to: exchange) {
        case .now(let response):
            answer = response
        case .after(let delay, let response):
            try? await Task.sleep(for: delay)
            answer = response()
        case .goAway(let otherwise):
            answer = otherwise
        }
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let name = HTTPFields.Element.Name(name) { fields.append(.init(name: name, value: value)) }
        }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}
