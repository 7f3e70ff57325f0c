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
    ],
    swiftLanguageModes: [.v6]
)
