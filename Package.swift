// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "RecordSync",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "RecordModel", targets: ["RecordModel"]),
        .library(name: "RecordSQL", targets: ["RecordSQL"]),
        .library(name: "RecordStorage", targets: ["RecordStorage"]),
        .library(name: "RecordStorageSQL", targets: ["RecordStorageSQL"]),
        .library(name: "RecordRules", targets: ["RecordRules"]),
        .library(name: "RecordSQLiteEngine", targets: ["RecordSQLiteEngine"]),
        .library(name: "RecordPostgresEngine", targets: ["RecordPostgresEngine"]),
        .library(name: "RecordServer", targets: ["RecordServer"]),
        .library(name: "RecordClient", targets: ["RecordClient"]),
        .executable(name: "recordserver", targets: ["recordserver"]),
        .executable(name: "recordctl", targets: ["recordctl"]),
        .executable(name: "recordbench", targets: ["recordbench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "4.1.0"..<"5.0.0"),
        // The client's HTTP on Linux (FoundationNetworking's URLSession costs about a millisecond
        // a request and spins on large uploads: docs/performance.md, "The client's HTTP on Linux").
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // The PostgreSQL engine's driver.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // TLS to PostgreSQL where the database URL asks for it.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // GET /metrics: counters and histograms through swift-metrics, in Prometheus's text format.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // ID tokens of identity providers (OpenID Connect, Sign in with Apple): JWT and JWKS.
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        // Generated values of every wire type for the round-trip tests (tests only).
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        // The system zlib, for gzip-compressed request bodies (Debian: zlib1g-dev).
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .target(
            name: "RecordModel",
            dependencies: ["CZlib"],
            path: "Sources/RecordModel",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RecordSQL",
            dependencies: [
                "RecordModel",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the WAL hook of WALCheckpointer.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Sources/RecordSQL",
            swiftSettings: swiftSettings
        ),
        // The storage protocol and its row types: what an engine implements and the rules call.
        .target(
            name: "RecordStorage",
            dependencies: ["RecordModel"],
            path: "Server/RecordStorage",
            swiftSettings: swiftSettings
        ),
        // The storage primitives written once over a SQL session, for every engine's dialect.
        .target(
            name: "RecordStorageSQL",
            dependencies: ["RecordModel", "RecordStorage", "RecordSQL"],
            path: "Server/RecordStorageSQL",
            swiftSettings: swiftSettings
        ),
        // The CloudKit rules over the storage protocol: no SQL, no HTTP.
        .target(
            name: "RecordRules",
            dependencies: [
                "RecordModel",
                "RecordStorage",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                // scrypt, for the passwords of built-in accounts.
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Server/RecordRules",
            swiftSettings: swiftSettings
        ),
        // The SQLite engine: the storage protocol's primitives as SQL (GRDB).
        .target(
            name: "RecordSQLiteEngine",
            dependencies: [
                "RecordModel",
                "RecordStorage",
                "RecordStorageSQL",
                "RecordSQL",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Server/RecordSQLiteEngine",
            swiftSettings: swiftSettings
        ),
        // The PostgreSQL engine: the same primitives as SQL for PostgreSQL (postgres-nio).
        .target(
            name: "RecordPostgresEngine",
            dependencies: [
                "RecordModel",
                "RecordStorage",
                "RecordStorageSQL",
                "RecordSQL",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Server/RecordPostgresEngine",
            swiftSettings: swiftSettings
        ),
        // The HTTP server (the only target that imports Hummingbird).
        .target(
            name: "RecordServer",
            dependencies: [
                "RecordModel",
                "RecordRules",
                "RecordSQLiteEngine",
                "RecordPostgresEngine",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                // Fetching identity providers' keys (JWKS) from their URLs.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                // Mail (sign-up and reset codes) through an SMTP server.
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Server/RecordServer",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RecordClient",
            dependencies: [
                "RecordModel",
                "RecordSQL",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            path: "Client/RecordClient",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "recordserver",
            dependencies: [
                "RecordServer",
                "RecordSQL",
                "RecordSQLiteEngine",
                "RecordPostgresEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/recordserver",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "RecordServer",
                "RecordModel",
                "RecordRules",
                "RecordSQLiteEngine",
                "RecordPostgresEngine",
                "RecordStorageSQL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "recordctl",
            dependencies: [
                "RecordClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/recordctl",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "recordbench",
            dependencies: [
                "RecordClient",
                "RecordServer",
                "RecordPostgresEngine",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // initial-sync's plain HTTP client (and Kinto's, beside it).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Sources/recordbench",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "recordsync-testclient",
            dependencies: ["RecordClient"],
            path: "Tests/ClientProcess",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordClientTests",
            dependencies: [
                "RecordClient",
                "recordsync-testclient",
                "recordserver",
                "RecordServer",
                "TestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tests/RecordClientTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordCtlTests",
            dependencies: [
                "recordctl",
                "RecordClient",
                "TestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/RecordCtlTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordModelTests",
            dependencies: ["RecordModel", .product(name: "PropertyBased", package: "swift-property-based")],
            path: "Tests/RecordModelTests",
            swiftSettings: swiftSettings
        ),
        // The rules alone: no engine, no database, no HTTP.
        .testTarget(
            name: "RecordRulesTests",
            dependencies: ["RecordRules", "RecordModel"],
            path: "Tests/RecordRulesTests",
            swiftSettings: swiftSettings
        ),
        // The storage engines, each against what the storage protocol and the schema's
        // description say.
        .testTarget(
            name: "RecordStorageTests",
            dependencies: [
                "RecordModel",
                "RecordSQL",
                "RecordStorage",
                "RecordStorageSQL",
                "RecordRules",
                "RecordServer",
                "RecordSQLiteEngine",
                "RecordPostgresEngine",
                "TestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/RecordStorageTests",
            swiftSettings: swiftSettings
        ),
        // The fuzz harnesses (Fuzz/Sources/recordfuzz, linked file by file) over their seeds.
        .testTarget(
            name: "FuzzCorpusTests",
            dependencies: [
                "RecordModel",
                "RecordRules",
                "RecordServer",
                "RecordSQLiteEngine",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/FuzzCorpusTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordBenchTests",
            dependencies: ["recordbench", "TestSupport"],
            path: "Tests/RecordBenchTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RecordServerTests",
            dependencies: [
                "RecordServer",
                "RecordModel",
                "RecordSQL",
                "TestSupport",
                "recordserver",
                "recordctl",
                "recordsync-testclient",
                "RecordClient",
                "RecordPostgresEngine",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // A test identity provider: its own keys, JWKS and ID tokens.
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            path: "Tests/RecordServerTests",
            // Read from the source tree by OldDataDirectoryTests (a data directory of an earlier release).
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
    ]
)
