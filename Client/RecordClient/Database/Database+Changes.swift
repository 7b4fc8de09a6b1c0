import Foundation
import RecordModel

/// An opaque change token (CloudKit's `CKServerChangeToken`): a zone token or a database token.
/// Persist it with the data it covers, in the same transaction.
public struct ServerChangeToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The token's wire string.
    public let rawValue: String
    /// Wraps a wire string.
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// One page of a database's zone changes.
public struct DatabaseChangesPage: Sendable, Hashable {
    /// Zones whose records changed (or that were created), oldest change first.
    public var modifications: [ZoneID]
    /// Zones that were deleted.
    public var deletions: [ZoneID]
    /// The token covering this page.
    public var changeToken: ServerChangeToken
    /// More pages remain.
    public var moreComing: Bool
}

/// One page of a zone's record changes.
public struct ZoneChangesPage: Sendable, Hashable {
    /// Records changed since the token, in their current state, oldest change first.
    public var modifications: [Record]
    /// Records deleted since the token, with their types.
    public var deletions: [(recordID: Record.ID, recordType: String)]
    /// Every change of the page in feed order: changed records and tombstones (`deleted`).
    public var changes: [Record]
    /// The token covering this page.
    public var changeToken: ServerChangeToken
    /// More pages remain.
    public var moreComing: Bool
    /// Extension (`including:`): the records the page's reference fields reach, targets first.
    public var includedRecords: [Record] = []
    /// For each of ``changes``, the JSON text its fields arrived in (when the answer was read
    /// directly), which the cache stores as it is.
    var fieldsText: [String?] = []
    /// For each of ``changes``, its references (``RecordModel/Record/references``), and the
    /// types of the page's fields by record type: worked out when the answer is decoded, so
    /// that the cache's writer does not (empty and `nil` for a page made otherwise).
    var references: [[(field: String, reference: Reference)]] = []
    /// For each of ``changes``, its `LOCATION` fields (every field, for a page decoded whole),
    /// read likewise (empty for a page made otherwise); words are read by the cache's writer.
    var searchFields: [[(key: String, value: FieldValue)]] = []
    var fieldTypes: [String: [String: FieldType]]?
    /// Whether ``changes`` carry no fields, only ``fieldsText`` (read for the cache alone).
    var fieldsSkimmed = false

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.changes == rhs.changes && lhs.changeToken == rhs.changeToken && lhs.moreComing == rhs.moreComing
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(changes)
        hasher.combine(changeToken)
    }
}

extension Database {
    /// One page of the zones changed or deleted since `token` (CloudKit's `databaseChanges(since:)`).
    ///
    /// - Parameter token: the token from the previous page; `nil` for the first fetch, which
    ///   lists the live zones.
    /// - Throws: `BAD_REQUEST` for a token that is not this database's.
    public func databaseChanges(since token: ServerChangeToken?, resultsLimit: Int? = nil) async throws -> DatabaseChangesPage {
        let answer = try await transport.post("changes/database", DatabaseChangesRequest(syncToken: token?.rawValue, resultsLimit: resultsLimit), as: DatabaseChanges.self)
        return DatabaseChangesPage(
            modifications: answer.zones.filter { $0.deleted != true }.map(\.zoneID),
            deletions: answer.zones.filter { $0.deleted == true }.map(\.zoneID),
            changeToken: ServerChangeToken(rawValue: answer.syncToken), moreComing: answer.moreComing
        )
    }

    /// One page of a zone's changes since `token` (CloudKit's `recordZoneChanges(inZoneWith:since:)`),
    /// asked for in RecordSync's compact form where the server offers it (see
    /// ``recordZoneChanges(_:reading:)``).
    ///
    /// - Parameters:
    ///   - token: the token from the previous page; `nil` fetches the zone's current records
    ///     from the start.
    /// - Throws: `CHANGE_TOKEN_EXPIRED` when the zone was deleted and recreated since the token
    ///   (fetch again with `nil`); `ZONE_NOT_FOUND`; `BAD_REQUEST` for a foreign token.
    ///   - including: extension: reference fields to follow; what they reach (`depth` hops)
    ///     comes back in ``ZoneChangesPage/includedRecords``, and a page whose includes are many
    ///     comes back smaller.
    public func recordZoneChanges(inZoneWith zoneID: ZoneID, since token: ServerChangeToken?, desiredKeys: [String]? = nil,
                                  resultsLimit: Int? = nil, including: [String] = [], depth: Int = 1) async throws -> ZoneChangesPage {
        let request = RecordChangesRequest(zoneID: zoneID, syncToken: token?.rawValue, resultsLimit: resultsLimit, desiredKeys: desiredKeys,
                                           include: including.isEmpty ? nil : including, includeDepth: including.isEmpty ? nil : depth)
        return try await recordZoneChanges(request) { try ZoneChangesPage(answer: $0.decompressed()) }
    }

    /// A page asked for in CloudKit's form, decoded: what the sync engine asks for again when
    /// an answer could not be read.
    func recordZoneChangesInCloudKitsForm(inZoneWith zoneID: ZoneID, since token: ServerChangeToken?, resultsLimit: Int?) async throws -> ZoneChangesPage {
        let request = RecordChangesRequest(zoneID: zoneID, syncToken: token?.rawValue, resultsLimit: resultsLimit)
        return try await recordZoneChanges(request, cloudKitForm: true) { try ZoneChangesPage(answer: $0.decompressed()) }
    }

    /// ``recordZoneChanges(inZoneWith:since:desiredKeys:resultsLimit:)``'s answer as it arrived
    /// (compressed or not), for a caller that decodes it itself (``ZoneChangesPage/init(answer:)``),
    /// later or elsewhere: the sync engine asks for the next page before it has decompressed
    /// and decoded this one.
    func recordZoneChangesAnswer(inZoneWith zoneID: ZoneID, since token: ServerChangeToken?, resultsLimit: Int?) async throws -> HTTPTransport.Answer {
        try await recordZoneChanges(RecordChangesRequest(zoneID: zoneID, syncToken: token?.rawValue, resultsLimit: resultsLimit)) { $0 }
    }

    /// The answer to `request`, read by `read` (``HTTPTransport/post(_:_:readingAsArrived:)``),
    /// asked for in the fastest form the server offers: RecordSync's compact form
    /// (`recordSyncCompact`: about a third of the bytes of CloudKit's, each field's type and
    /// each stamp's user given once a page), unless the server refused it before or
    /// `cloudKitForm` asks for CloudKit's. A server that does not know the extension either
    /// ignores the key and answers in CloudKit's form, which the reader takes as well, or
    /// refuses the request with `BAD_REQUEST`: until the server has answered a compact request,
    /// such a refusal is asked again without the key, and if that is answered, the container
    /// asks in CloudKit's form from then on (``Container/learned``). Once it has, a
    /// `BAD_REQUEST` is the request's own, sent once.
    func recordZoneChanges<Reply>(_ request: RecordChangesRequest, cloudKitForm: Bool = false,
                                  reading read: (HTTPTransport.Answer) throws -> Reply) async throws -> Reply {
        var request = request
        let learned = container.learned
        let known = learned.compactChanges
        guard !cloudKitForm, known != .refused else { return try await transport.post("records/changes", request, readingAsArrived: read) }
        request.recordSyncCompact = true
        request.recordSyncCompactVersion = 2
        do {
            let answer = try await transport.post("records/changes", request, readingAsArrived: read)
            if known == .unknown { learned.compactChanges = .answered }
            return answer
        } catch let error as RecordSyncError where error.code == .badRequest && known == .unknown {
            request.recordSyncCompact = nil
            request.recordSyncCompactVersion = nil
            let answer = try await transport.post("records/changes", request, readingAsArrived: read)
            learned.compactChanges = .refused
            return answer
        }
    }
}

extension ZoneChangesPage {
    /// Decodes a `records/changes` answer.
    init(answer data: Data) throws {
        try self.init(answer: data, skimmingFields: false)
    }

    /// Decodes a `records/changes` answer, in CloudKit's form or RecordSync's compact one (whose
    /// records' fields are read back as CloudKit's text); with `skimmingFields`, for the cache only: the records
    /// carry no fields (the cache stores ``fieldsText`` as it is), and only the fields' types and
    /// references are read from that text (a field holding no reference is stepped over, not
    /// decoded).
    init(answer data: Data, skimmingFields: Bool) throws {
        let answer = try StoredZoneChanges.decode(data, skimmingFields: skimmingFields)
        let records = answer.entries.map(\.record)
        self.init(
            modifications: records.filter { !$0.deleted },
            deletions: records.filter(\.deleted).map { ($0.recordID, $0.recordType) },
            changes: records, changeToken: ServerChangeToken(rawValue: answer.syncToken), moreComing: answer.moreComing,
            fieldsText: answer.entries.map(\.fieldsJSON)
        )
        includedRecords = answer.includedRecords ?? []
        references = answer.entries.map { $0.fieldsSummary?.references ?? $0.record.references }
        searchFields = answer.entries.map { $0.fieldsSummary?.locations ?? $0.record.fields.map { ($0.key, $0.value) } }
        fieldsSkimmed = skimmingFields
        fieldTypes = Self.fieldTypes(of: answer.entries.lazy.filter { !$0.record.deleted }.map { entry in
            (entry.record.recordType, entry.fieldsSummary?.types ?? entry.record.fields.map { ($0.key, $0.value.type) })
        })
    }

    /// The types of `records`' fields by record type (the first record holding a field names
    /// its type).
    static func fieldTypes(of records: some Sequence<Record>) -> [String: [String: FieldType]] {
        fieldTypes(of: records.lazy.map { record in (record.recordType, record.fields.map { ($0.key, $0.value.type) }) })
    }

    /// The types of fields by record type, from each record's type and fields' types (the first
    /// record holding a field names its type).
    static func fieldTypes(of records: some Sequence<(String, [(field: String, type: FieldType)])>) -> [String: [String: FieldType]] {
        var types: [String: [String: FieldType]] = [:]
        for (recordType, fields) in records {
            for (field, type) in fields where types[recordType]?[field] == nil {
                types[recordType, default: [:]][field] = type
            }
        }
        return types
    }
}
