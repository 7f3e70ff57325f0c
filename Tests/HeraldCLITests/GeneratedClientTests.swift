import Foundation
import HeraldTestSupport
import Testing

/// The API any generator can use: `Tests/OpenAPIClient/generated_client_test.py` starts
/// `herald mock` and `herald serve` (this build's), generates a Python client from the served
/// `/openapi.json` with openapi-python-client, and through that client alone, unmodified,
/// registers devices, imports some, registers a browser's subscription, sends to a user and
/// follows it to its deliveries, and schedules and cancels a broadcast.
@Suite("A client generated from openapi.json", .timeLimit(.minutes(4)))
struct GeneratedClientTests {
    /// The generator and the validator, pinned as `.ci/run` installs them.
    static let generator = PythonPeers.Module("openapi_python_client", package: "openapi-python-client==0.29.1")
    static let validator = PythonPeers.Module("openapi_spec_validator", package: "openapi-spec-validator==0.9.0")

    /// The package's root: this file is `Tests/HeraldCLITests/GeneratedClientTests.swift`.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("openapi-python-client's client, unmodified: devices, an import, a browser, a send followed to its deliveries, a schedule cancelled")
    func generatedClient() async throws {
        try await PythonPeers.require(Self.generator, Self.validator, .cryptography)
        let script = Self.root.appendingPathComponent("Tests/OpenAPIClient/generated_client_test.py").path
        do {
            let output = try await runCommand("python3", [script, "--herald", HeraldProcess.executable.path])
            #expect(output.standardOutput.contains("PASS"), "\(output.all)")
        } catch {
            Issue.record("the generated client's test failed: \(error)")
        }
    }
}
