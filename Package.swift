// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        // Transport-free APNs model: payloads, headers, device tokens, errors, provider tokens.
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .executable(name: "herald", targets: ["herald"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
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
            name: "HeraldCLI",
            dependencies: [
                "HeraldCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "herald", dependencies: ["HeraldCLI"]),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: ["HeraldCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(name: "HeraldCLITests", dependencies: ["HeraldCore", "herald"]),
    ],
    swiftLanguageModes: [.v6]
)
