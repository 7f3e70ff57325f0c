import Foundation
import Synchronization
import Testing

/// The independent Python peers some tests check Herald against (http_ece, pywebpush,
/// firebase-admin, cryptography, Playwright). On a machine with Swift alone they are missing, and
/// a test that needs one skips with one line saying what to install; CI (`.ci/run` installs them
/// and sets `HERALD_REQUIRE_PEERS`) fails instead of skipping.
public enum PythonPeers {
    /// A Python module a test imports, with the PyPI package `.ci/run` installs for it.
    public struct Module: Sendable, Hashable {
        /// What the script imports.
        public let name: String
        /// What `pip install` takes, pinned as in `.ci/run`.
        public let package: String

        public init(_ name: String, package: String) {
            self.name = name
            self.package = package
        }

        public static let httpECE = Module("http_ece", package: "http-ece==1.2.1")
        public static let cryptography = Module("cryptography", package: "cryptography>=42")
        public static let pywebpush = Module("pywebpush", package: "pywebpush==2.5.0")
        public static let firebaseAdmin = Module("firebase_admin", package: "firebase-admin==7.7.0")
        public static let playwright = Module("playwright", package: "playwright==1.65.2")
    }

    /// CI sets `HERALD_REQUIRE_PEERS`: there a missing peer fails the test instead of skipping it.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["HERALD_REQUIRE_PEERS"] != nil }

    /// Returns when python3 can import every module. Otherwise skips the test with one line
    /// naming what to install, or, where peers are required, fails it with that line.
    public static func require(_ modules: Module...) async throws {
        guard let reason = await missing(modules) else { return }
        if isRequired { throw Missing(description: reason) }
        try Test.cancel(Comment(rawValue: reason))
    }

    /// One line saying what to install, or `nil` when python3 has every module.
    public static func missing(_ modules: [Module]) async -> String? {
        guard hasPython else { return "needs python3 (apt-get install -y python3) and \(installLine(modules))" }
        var absent: [Module] = []
        for module in modules where !(await imports(module)) { absent.append(module) }
        return absent.isEmpty ? nil : "needs Python's \(absent.map(\.name).joined(separator: ", ")): \(installLine(absent)) (.ci/run installs it)"
    }

    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    private static func installLine(_ modules: [Module]) -> String {
        "python3 -m pip install " + modules.map { "'\($0.package)'" }.joined(separator: " ")
    }

    private static var hasPython: Bool {
        ProcessInfo.processInfo.environment["PATH", default: "/usr/bin:/bin"].split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/python3")
        }
    }

    /// Whether python3 imports the module, asked once per process.
    private static func imports(_ module: Module) async -> Bool {
        if let known = found.withLock({ $0[module.name] }) { return known }
        let imported = (try? await runCommand("python3", ["-c", "import \(module.name)"])) != nil
        found.withLock { $0[module.name] = imported }
        return imported
    }

    private static let found = Mutex<[String: Bool]>([:])
}
