// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        // Transport-free APNs model: payloads, headers, device tokens, errors, provider tokens.
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        // Certificates and keys from .p12 and PEM files, for TLS client auth and signing.
        .library(name: "HeraldIdentity", targets: ["HeraldIdentity"]),
        // APNs: the HTTP/2 provider client.
        .library(name: "HeraldAPNS", targets: ["HeraldAPNS"]),
        // A mock APNs server (HTTP/2 and the legacy binary protocol) to test against.
        .library(name: "HeraldAPNSMock", targets: ["HeraldAPNSMock"]),
        // What every mock shares: the certificate authority that issues their TLS identities.
        .library(name: "HeraldMockCore", targets: ["HeraldMockCore"]),
        // The legacy binary provider and feedback reader (retired by Apple, kept for old gateways).
        .library(name: "HeraldLegacy", targets: ["HeraldLegacy"]),
        // Signed Wallet passes and Safari push packages.
        .library(name: "HeraldBundles", targets: ["HeraldBundles"]),
        // Web Push (RFC 8030, 8291, 8292): VAPID, message encryption and a client, for browsers.
        .library(name: "HeraldWebPush", targets: ["HeraldWebPush"]),
        // A mock Web Push service that is also the browser, to test against.
        .library(name: "HeraldWebPushMock", targets: ["HeraldWebPushMock"]),
        // Firebase Cloud Messaging (HTTP v1) for Android: service-account OAuth, messages and a client.
        .library(name: "HeraldFCM", targets: ["HeraldFCM"]),
        // A mock FCM service with its OAuth token endpoint, to test against.
        .library(name: "HeraldFCMMock", targets: ["HeraldFCMMock"]),
        // Huawei Push Kit: the Android API (v1, OAuth client credentials) and HarmonyOS NEXT's (v3, service-account JWT).
        .library(name: "HeraldHMS", targets: ["HeraldHMS"]),
        // A mock Huawei Push Kit with its OAuth token endpoint, to test against.
        .library(name: "HeraldHMSMock", targets: ["HeraldHMSMock"]),
        // The device registry and durable delivery queue, on SQLite or PostgreSQL.
        .library(name: "HeraldStore", targets: ["HeraldStore"]),
        // The push gateway (`herald serve`): HTTP API, delivery workers and metrics over the store.
        .library(name: "HeraldGateway", targets: ["HeraldGateway"]),
        // For the apps themselves (iOS, macOS, and its Notification Service Extension): registers
        // the device through the app's backend and reports receipts to the gateway. Foundation only.
        .library(name: "HeraldDeviceKit", targets: ["HeraldDeviceKit"]),
        .executable(name: "herald", targets: ["herald"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // Pinned to a minor version: the CMS signing API used by signed bundles is SPI.
        .package(url: "https://github.com/apple/swift-certificates.git", .upToNextMinor(from: "1.21.1")),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // NIOHTTPTypes: the HTTP parts Hummingbird's pipeline carries, for the API's connection guard.
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation.git", from: "0.9.20"),
        // SQLite itself: HeraldStore drives the copy sqlite-nio builds (its `VaporCSQLite` module)
        // through SQLite's C API, to keep prepared statements and run a transaction on one thread.
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // No traits: the gateway reads its own JSON configuration (no swift-configuration).
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // FCM's OAuth token exchange, webhooks, and the CLI's benchmarks. (Web Push's HTTP/1.1 is
        // Herald's own client: every connection must pass the endpoint policy's check of the
        // address it resolved to, and async-http-client has no hook before its connect.)
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        .target(
            name: "HeraldCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            name: "HeraldIdentity",
            dependencies: [
                "HeraldCore",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // HTTP/2 framing, settings and flow control for APNs traffic, shared by client and mock.
        .target(
            name: "HeraldHTTP2",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
        // The in-flight bound and bulk outcome delivery shared by the HTTP/2 and legacy clients.
        // Its API is `@_spi(HeraldFlow) public`, not `package`: Swift 6.3 does not specialise a
        // `package` `@inlinable` generic in another module, and the bulk send's per-notification
        // path ran generic (buffer pops and metadata lookups: 16 % of the gateway's task pool).
        // Not a product, so not API either.
        .target(
            name: "HeraldFlow",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")]
        ),
        // The HTTP client that belongs to no platform, whose equal users are the APNs, Web Push and
        // FCM clients: the HTTP/2 connection pool (generic over the request, each platform's rules
        // a value), the HTTP/1.1 client for push services without HTTP/2, the named answer, typed
        // errors, metrics labelled by platform, the guard that checks an address before a
        // connection is opened, and the one retry loop. Not a product.
        .target(
            name: "HeraldTransport",
            dependencies: [
                "HeraldCore",
                "HeraldFlow",
                "HeraldHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "HeraldAPNS",
            dependencies: [
                "HeraldTransport",
                "HeraldCore",
                "HeraldIdentity",
                "HeraldHTTP2",
                "HeraldFlow",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The legacy binary protocol's frames and codecs, shared by the legacy client and the mock
        // (as HeraldHTTP2 is for HTTP/2); its value types reach users through HeraldLegacy.
        .target(
            name: "HeraldLegacyWire",
            dependencies: ["HeraldCore", .product(name: "NIOCore", package: "swift-nio")]
        ),
        .target(
            name: "HeraldLegacy",
            dependencies: [
                "HeraldLegacyWire",
                "HeraldCore",
                "HeraldIdentity",
                "HeraldFlow",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // What the APNs, Web Push and FCM mocks share (no platform's): a certificate authority
        // for their TLS identities, and a bounded record of what they received.
        .target(
            name: "HeraldMockCore",
            dependencies: [
                "HeraldIdentity",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "HeraldAPNSMock",
            dependencies: [
                "HeraldMockCore",
                "HeraldCore",
                "HeraldFlow",
                "HeraldIdentity",
                "HeraldHTTP2",
                "HeraldLegacyWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HeraldBundles",
            dependencies: [
                "HeraldCore",
                "HeraldIdentity",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ]
        ),
        .target(
            name: "HeraldWebPush",
            dependencies: [
                "HeraldTransport",
                "HeraldCore",
                "HeraldFlow",
                "HeraldIdentity",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // The mocks' HTTPS listener (Hummingbird over TLS, h2 and HTTP/1.1), shared by the Web Push
        // and FCM mocks; not a product.
        .target(
            name: "HeraldMockHTTP",
            dependencies: [
                "HeraldMockCore",
                "HeraldHTTP2",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HeraldWebPushMock",
            dependencies: [
                "HeraldCore",
                "HeraldFlow",
                "HeraldWebPush",
                "HeraldMockCore",
                "HeraldMockHTTP",
                "HeraldIdentity",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HeraldFCM",
            dependencies: [
                "HeraldTransport",
                "HeraldCore",
                "HeraldFlow",
                "HeraldIdentity",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "HeraldFCMMock",
            dependencies: [
                "HeraldCore",
                "HeraldFlow",
                "HeraldFCM",
                "HeraldMockCore",
                "HeraldMockHTTP",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HeraldHMS",
            dependencies: [
                "HeraldTransport",
                "HeraldCore",
                "HeraldFlow",
                "HeraldIdentity",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "HeraldHMSMock",
            dependencies: [
                "HeraldCore",
                "HeraldFlow",
                "HeraldHMS",
                "HeraldMockCore",
                "HeraldMockHTTP",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HeraldStore",
            dependencies: [
                "HeraldCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HeraldGateway",
            dependencies: [
                "HeraldCore",
                "HeraldIdentity",
                "HeraldAPNS",
                "HeraldStore",
                "HeraldWebPush",
                "HeraldFCM",
                "HeraldHMS",
                // The webhook sender's HTTP/1.1 client (as Web Push's).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The API's contract, served at /openapi.json and checked against the routes by a
            // test; and the console's page, script and style, served at /console.
            resources: [
                .embedInCode("OpenAPI/openapi.json"), .embedInCode("Console/index.html"), .embedInCode("Console/console.js"),
                .embedInCode("Console/console.css"), .embedInCode("SDK/herald-sw.js"), .embedInCode("SDK/herald-page.js"),
            ]
        ),
        .target(
            name: "HeraldCLI",
            dependencies: [
                "HeraldCore",
                "HeraldIdentity",
                "HeraldBundles",
                "HeraldAPNS",
                "HeraldLegacy",
                "HeraldAPNSMock",
                "HeraldStore",
                "HeraldGateway",
                "HeraldWebPush",
                "HeraldWebPushMock",
                "HeraldFCM",
                "HeraldFCMMock",
                "HeraldHMS",
                "HeraldHMSMock",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(name: "herald", dependencies: ["HeraldCLI"]),
        // Scratch directories and command runs shared by the test targets; not a product.
        .target(name: "HeraldTestSupport", path: "Tests/HeraldTestSupport"),
        // Hostile HTTP/2 peers for tests: a scripted frame-level server and a raw TLS client.
        .target(
            name: "HeraldHostilePeers",
            dependencies: [
                "HeraldHTTP2",
                "HeraldAPNSMock",
                "HeraldTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/HeraldHostilePeers"
        ),
        .target(name: "HeraldDeviceKit"),
        .testTarget(
            name: "HeraldDeviceKitTests",
            dependencies: ["HeraldDeviceKit"]
        ),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: ["HeraldTestSupport", "HeraldCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "HeraldAPNSTests",
            dependencies: [
                "HeraldTestSupport",
                "HeraldTransport",
                "HeraldFlow",
                "HeraldHostilePeers",
                "HeraldHTTP2",
                "HeraldCore",
                "HeraldIdentity",
                "HeraldAPNS",
                "HeraldAPNSMock",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "HeraldFlowTests",
            dependencies: ["HeraldTestSupport", "HeraldFlow", .product(name: "NIOCore", package: "swift-nio")]
        ),
        .testTarget(
            name: "HeraldBundlesTests",
            dependencies: [
                "HeraldTestSupport",
                "HeraldCore",
                "HeraldIdentity",
                "HeraldBundles",
                "herald",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "HeraldHTTP2Tests",
            dependencies: [
                "HeraldHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]
        ),
        .testTarget(
            name: "HeraldLegacyTests",
            dependencies: [
                "HeraldTestSupport",
                "HeraldCore",
                "HeraldIdentity",
                "HeraldLegacy",
                "HeraldAPNSMock",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HeraldStoreTests",
            dependencies: ["HeraldTestSupport", "HeraldCore", "HeraldStore"]
        ),
        .testTarget(
            name: "HeraldGatewayTests",
            dependencies: [
                "HeraldTestSupport",
                "HeraldHostilePeers",
                "HeraldCore",
                "HeraldAPNS",
                "HeraldAPNSMock",
                "HeraldStore",
                "HeraldGateway",
                "HeraldWebPush",
                "HeraldWebPushMock",
                "HeraldFCM",
                "HeraldFCMMock",
                "HeraldHMS",
                "HeraldHMSMock",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "HeraldWebPushTests",
            dependencies: [
                "HeraldTestSupport",
                "HeraldHostilePeers",
                "HeraldCore",
                "HeraldHTTP2",
                "HeraldMockCore",
                "HeraldMockHTTP",
                "HeraldWebPush",
                "HeraldWebPushMock",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "HeraldFCMTests",
            dependencies: [
                "HeraldTestSupport",
                "HeraldHostilePeers",
                "HeraldCore",
                "HeraldTransport",
                "HeraldFCM",
                "HeraldFCMMock",
                "herald",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "HeraldHMSTests",
            dependencies: [
                "HeraldTestSupport",
                "HeraldCore",
                "HeraldTransport",
                "HeraldHMS",
                "HeraldHMSMock",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "HeraldCLITests",
            dependencies: [
                "HeraldTestSupport", "HeraldHostilePeers", "HeraldCore", "HeraldAPNSMock", "HeraldWebPush", "HeraldWebPushMock", "HeraldFCMMock", "herald",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
