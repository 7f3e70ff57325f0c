/// Runs `body` with `client`, then always shuts the client down, whether `body` returned or
/// threw: the shape of every `with…Client` and `with…Server`. When `body` threw, its error is
/// the one thrown (the shutdown's is dropped); when it returned, a shutdown that throws throws.
@inlinable
@_spi(HeraldFlow) public func withShutdown<Client, Result>(
    of client: Client, shutdown: (Client) async throws -> Void, _ body: (Client) async throws -> Result
) async throws -> Result {
    let result: Result
    do {
        result = try await body(client)
    } catch {
        try? await shutdown(client)
        throw error
    }
    try await shutdown(client)
    return result
}
