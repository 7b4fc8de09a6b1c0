import Foundation
import RecordModel

/// One database of a container: the signed-in user's private database, the public one, or
/// the shared one (CloudKit's `CKDatabase`). Every method is an async call to the server.
public struct Database: Sendable {
    /// Which database.
    public enum Scope: String, Sendable, Hashable, Codable {
        case `public`
        case `private`
        /// The zones other users shared with the signed-in user, each stored in its owner's
        /// private database: a zone ID here names its owner (`ownerRecordName`).
        case shared
    }

    /// The container this database belongs to.
    public let container: Container
    /// Public or private.
    public let scope: Scope
    /// The most operations sent in one request; larger batches are split (the server's limit,
    /// 400 by default).
    public var maximumOperationsPerRequest: Int = 400
    /// About the most JSON sent in one request; larger batches are split (half the server's
    /// default body limit of 16 MiB).
    public var maximumRequestBytes: Int = 8 * 1024 * 1024
    let transport: HTTPTransport

    init(container: Container, scope: Scope) {
        self.container = container
        self.scope = scope
        let base = container.serverURL
            .appendingPathComponent("database/1")
            .appendingPathComponent(container.identifier)
            .appendingPathComponent(container.environment.rawValue)
            .appendingPathComponent(scope.rawValue)
        transport = HTTPTransport(baseURL: base, credentials: container.credentials, session: container.session, certificateAuthority: container.certificateAuthority)
    }
}

/// How a save treats the server's copy of a record (CloudKit's `CKModifyRecordsOperation.RecordSavePolicy`).
public enum SavePolicy: Sendable, Hashable {
    /// Save only if the server's record is still the version the record's change tag names
    /// (the record replaces it: fields it lacks are removed); a record without a tag is
    /// created (and fails if it exists). The default.
    case ifServerRecordUnchanged
    /// Overwrite the fields the record holds, keeping the server's other fields.
    case changedKeys
    /// Overwrite the whole record: fields the record lacks are removed.
    case allKeys

    /// The wire operation that saves `record` under this policy.
    func operationType(for record: Record) -> OperationType {
        switch self {
        case .ifServerRecordUnchanged: record.recordChangeTag == nil ? .create : .replace
        case .changedKeys: .forceUpdate
        case .allKeys: .forceReplace
        }
    }
}

/// Records fetched by ID: the records, ordered so that every record comes after the records it
/// references (targets before sources), and the IDs that failed, with their errors.
public struct FetchedRecords: Sendable {
    /// The records found, targets before sources.
    public var records: [Record]
    /// Extension (`including:`): records reached through the followed reference fields,
    /// targets before sources, without the records asked for.
    public var includedRecords: [Record]
    /// The error of each ID that was not fetched.
    public var errors: [Record.ID: RecordSyncError]
    /// The IDs that failed, in request order, for a retry.
    public var failedIDs: [Record.ID]

    /// The result for one ID (a zone ID without an owner matches its zone of any owner).
    public subscript(id: Record.ID) -> Result<Record, RecordSyncError>? {
        if let record = records.first(where: { $0.recordName == id.recordName && $0.recordID.zoneID.sameZone(as: id.zoneID) }) {
            return .success(record)
        }
        return errors[id].map { .failure($0) }
    }
}

extension ZoneID {
    /// Whether `other` names the same zone: the same name, and the same owner when both name one
    /// (the server names the owner of a private zone; a client's zone ID may not).
    func sameZone(as other: ZoneID) -> Bool {
        zoneName == other.zoneName && (ownerRecordName == nil || other.ownerRecordName == nil || ownerRecordName == other.ownerRecordName)
    }
}
