import Foundation

/// A fresh temporary directory, removed when `body` returns.
public func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("recordsync-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try await body(directory)
}
