// swift-tools-version:6.1
// libFuzzer harnesses over every parser of outside input, RecordSync's own modules built with
// -sanitize=fuzzer,address: `Scripts/fuzz` builds and runs them (docs/architecture.md, Fuzzing).
// A package of its own, so that the main package's `swift build` never links a target without
// a `main` of its own (libFuzzer supplies it).
import PackageDescription

let package = Package(
    name: "RecordSyncFuzz",
    dependencies: [
        .package(name: "RecordSync", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "recordfuzz",
            dependencies: [
                .product(name: "RecordModel", package: "RecordSync"),
                .product(name: "RecordRules", package: "RecordSync"),
                .product(name: "RecordSQLiteEngine", package: "RecordSync"),
                .product(name: "RecordServer", package: "RecordSync"),
            ],
            path: "Sources/recordfuzz",
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                // No `main`: libFuzzer's drives the harness through LLVMFuzzerTestOneInput.
                .unsafeFlags(["-parse-as-library"]),
            ]
        ),
    ]
)
