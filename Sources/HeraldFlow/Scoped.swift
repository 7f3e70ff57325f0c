/// Runs `body` with `client`, then always shuts the client down, whether `body` returned or
/// threw: the shape of `withAPNSClient` and `withLegacyClient`.
@inlinable
package func withShutdown<Client, Result>(
    of client: Client, shutdown: (Client) async -> Void, _ body: (Client) async throws -> Result
) async throws -> Result {
    let result: Result
    do {
        result = try await body(client)
    } catch {
        await shutdown(client)
        throw error
    }
    await shutdown(client)
    return result
}
