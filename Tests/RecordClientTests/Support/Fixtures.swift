import Foundation
import RecordClient
import TestSupport

extension LiveServer {
    /// A container signed in as a new user.
    func container(forNewUser name: String, identifier: String = "iCloud.test.Gallery") async throws -> Container {
        Container(serverURL: url, identifier: identifier, credentials: .bearerToken(try await token(forNewUser: name)))
    }
}

/// Runs `body` with a live server in a fresh directory.
func withServer<T: Sendable>(configure: @Sendable (inout ServerConfiguration) -> Void = { _ in },
                             _ body: @escaping @Sendable (LiveServer) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in
        try await withLiveServer(directory: directory, configure: configure, body)
    }
}

/// The gallery's record shapes.
enum Gallery {
    static let zone = ZoneID(zoneName: "Gallery")

    static func artist(_ name: String, in zone: ZoneID = Gallery.zone) -> Record {
        var record = Record(recordType: "Artist", recordID: Record.ID(recordName: name, zoneID: zone))
        record["name"] = .string(name)
        return record
    }

    static func artwork(_ name: String, by artist: String, in zone: ZoneID = Gallery.zone, action: Record.Reference.Action = .deleteSelf) -> Record {
        var record = Record(recordType: "Artwork", recordID: Record.ID(recordName: name, zoneID: zone))
        record["title"] = .string(name)
        record["artist"] = .reference(Record.Reference(recordID: Record.ID(recordName: artist, zoneID: zone), action: action))
        return record
    }
}

/// Waits until `condition` holds, checking every 20 ms, for at most `seconds`.
func eventually(within seconds: Double = 30, _ condition: @Sendable () async throws -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// Counts, from 1, calls from any thread (a tampering proxy's closure is synchronous).
final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func next() -> Int {
        lock.withLock {
            count += 1
            return count
        }
    }
}
