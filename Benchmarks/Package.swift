// swift-tools-version:6.1
// Micro-benchmarks for Herald's hot paths. Run from this folder:
//   swift package --allow-writing-to-package-directory benchmark
// Kept out of the main package so `swift test` never builds the benchmark harness.
import PackageDescription

let package = Package(
    name: "HeraldBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Herald", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-certificates.git", .upToNextMinor(from: "1.21.1")),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                .product(name: "HeraldCore", package: "Herald"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "BundleBenchmarks",
            dependencies: [
                .product(name: "HeraldCore", package: "Herald"),
                .product(name: "HeraldIdentity", package: "Herald"),
                .product(name: "HeraldBundles", package: "Herald"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/BundleBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
