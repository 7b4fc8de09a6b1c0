import Foundation
import PropertyBased
@testable import RecordModel
import Testing

// Generated round trips of every wire type of RecordModel. Covered:
//
// - Record.swift: Stamp, Record, RecordResult. Identifiers.swift: ZoneID, RecordID.
// - FieldValue.swift: FieldValue, RawFieldValue. Reference.swift: Reference, Location.
// - Record+CloudKit.swift: RecordZone. ServerErrorCode.swift: ErrorBody, ServerErrorCode.
// - ContinuationMarker.swift: ContinuationMarker. FieldType.swift: FieldType, ScalarType.
// - Wire/Zones.swift: Zone, ZoneResult, ZonesResponse, LookupZonesRequest, ModifyZonesRequest
//   (Operation, ZonePayload, OperationType), ZonesChangesRequest, ZonesChangesResponse.
// - Wire/ModifyRecords.swift: RecordPayload, OperationType, RecordOperation, ModifyRecordsRequest
//   (and EncodedModifyRecordsRequest, JSON/Wire+Modify.swift), RecordsResponse,
//   LookupRecordsRequest (Entry).
// - Wire/Subscriptions.swift: Subscription, ModifySubscriptionsRequest (Operation),
//   SubscriptionResult, SubscriptionsResponse, LookupSubscriptionsRequest (Entry),
//   PushTokenRequest, PushTokenResponse.
// - Wire/Query.swift: QueryComparator, SystemFieldName, LogicalOperator, QueryFilter, QuerySort,
//   Query, QueryRecordsRequest, QueryRecordsResponse.
// - Wire/Changes.swift: RecordChangesRequest, ZoneChanges, ZoneChangesRequest, ZoneChangesResult,
//   ZoneChangesResponse, DatabaseChangesRequest, ChangedZone, DatabaseChanges.
// - Wire/StoredZoneChanges.swift: StoredZoneChanges, in CloudKit's form and the compact one
//   (JSON/Wire+ChangePage.swift).
// - Wire/Users.swift: UserIdentity, UserLookupInfo, UserNameComponents, UserIdentityInfo,
//   UserIdentitiesResponse, CallerIdentityResponse, DiscoverUsersRequest, LookupUsersRequest,
//   UsersResponse, UserDiscoverabilityRequest.
// - Wire/Backlinks.swift: BacklinksRequest, Backlink, BacklinksResponse.
// - Wire/ZoneNotification.swift: ZoneNotification.
// - Wire/SignIn.swift: IDTokenSignInRequest, SignInResponse, SignUpRequest, SignUpVerifyRequest,
//   PasswordSignInRequest, PasswordChangeRequest, PasswordChangeResponse, ResetRequest,
//   ResetCompleteRequest, AccountDeleteRequest.
// - Wire/Assets.swift: AssetUploadRequest (Token), AssetUploadResponse (Token), AssetUploadReceipt
//   (SingleFile), AssetRereferenceRequest (Entry), AssetRereferenceResponse, Asset.
//
// What cannot round-trip exactly, and so is not generated (each noted at its generator):
// - JSON kept as it is (a raw field's value, an asset, notification info, a marker's values, a
//   rereference answer) holds no whole doubles: Foundation's decoder reads `2.0` as the integer 2.
// - A location's `timestamp` is read through a `Double`: only milliseconds within ±2^53.
// - A deleted record has no fields, stamps or change tag: its writer drops them.
// - A `RecordSyncError`'s `clientRecord` and `ancestorRecord` are not on the wire: always nil.
// - An `Asset` with both a stored value and a local file travels as its stored value alone.
// - `ErrorBody(_:)` gives every write of an error a fresh `uuid`: writes of a failure are
//   compared without it (``WireRoundTripTests/withoutErrorUUIDs(_:)``).

/// Generated values of every wire type, each written by every writer that remains and read back
/// by every reader (``roundTrips(_:sourceLocation:)``), and the writers of one wire form that
/// must agree byte for byte.
@Suite struct WireRoundTripTests {
    /// Writes `value` through every writer that remains and reads it back through every reader.
    ///
    /// 1. The wire's writer (the hand-written one for hot types, `Codable` otherwise) and its
    ///    reader give the value back.
    /// 2. The tree form (``JSONValueEncoder/encodeTree(_:)``) is the same JSON.
    /// 3. Foundation's coders, which run the same `Codable` conformances, read what the wire's
    ///    writer wrote, and write what the wire's reader reads.
    /// 4. Writing the value read gives the same bytes.
    static func roundTrips<T: Codable & Equatable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let bytes = try JSONValueEncoder().encode(value)
        let comment: Comment = "\(T.self): \(String(decoding: bytes, as: UTF8.self))"

        let decoded = try JSONValueDecoder().decode(T.self, from: bytes)
        #expect(decoded == value, comment, sourceLocation: sourceLocation)

        let tree = try JSONValueEncoder().encodeTree(value).serialized()
        let parsed = try JSONValue.parse(bytes).serialized()
        #expect(withoutErrorUUIDs(tree) == withoutErrorUUIDs(parsed), comment, sourceLocation: sourceLocation)

        let byFoundation = try JSONEncoder().encode(value)
        #expect(try JSONValueDecoder().decode(T.self, from: byFoundation) == value,
                "\(T.self) written by Foundation: \(String(decoding: byFoundation, as: UTF8.self))", sourceLocation: sourceLocation)
        #expect(try JSONDecoder().decode(T.self, from: bytes) == value, comment, sourceLocation: sourceLocation)

        let again = try JSONValueEncoder().encode(decoded)
        #expect(withoutErrorUUIDs(again) == withoutErrorUUIDs(bytes), comment, sourceLocation: sourceLocation)
    }

    /// `json` as text with the `uuid` of every error body in it emptied: ``ErrorBody/init(_:)``
    /// gives each write of an error a fresh one, so two writes of one failure differ there alone.
    static func withoutErrorUUIDs(_ json: Data) -> String {
        String(decoding: json, as: UTF8.self).replacing(#/"uuid":"[0-9A-Fa-f\-]{36}"/#, with: #""uuid":"""#)
    }

    /// Checks `count` values that `make` generates with ``roundTrips(_:sourceLocation:)``.
    static func check<T: Codable & Equatable & Sendable>(
        count: Int = 100, _ make: @escaping @Sendable (inout Arbitrary.RNG) -> T, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await propertyCheck(count: count, input: Generator(run: { make(&$0) }), perform: { value in
            try Self.roundTrips(value, sourceLocation: sourceLocation)
        }, sourceLocation: sourceLocation)
    }

    // MARK: - Records and what they hold

    @Test func zoneIDs() async { await Self.check { Arbitrary.zoneID(&$0) } }
    @Test func recordIDs() async { await Self.check { Arbitrary.recordID(&$0) } }
    @Test func recordZones() async { await Self.check { Arbitrary.recordZone(&$0) } }
    @Test func stamps() async { await Self.check { Arbitrary.stamp(&$0) } }
    @Test func references() async { await Self.check { Arbitrary.reference(&$0) } }
    @Test func locations() async { await Self.check { Arbitrary.location(&$0) } }
    @Test func fieldValues() async { await Self.check { Arbitrary.fieldValue(&$0) } }
    @Test func rawFieldValues() async { await Self.check { Arbitrary.rawFieldValue(&$0) } }
    @Test func records() async { await Self.check(count: 200) { Arbitrary.record(&$0) } }
    @Test func recordResults() async { await Self.check(count: 200) { Arbitrary.recordResult(&$0) } }
    @Test func errorBodies() async { await Self.check { Arbitrary.errorBody(&$0) } }
    @Test func continuationMarkers() async { await Self.check { Arbitrary.continuationMarker(&$0) } }

    /// The enumerations and codes on the wire: every case of each (there are few, so none is
    /// generated).
    @Test func enumerationsAndCodes() throws {
        for value in OperationType.allCases { try Self.roundTrips(value) }
        for value in [ModifyZonesRequest.OperationType.create, .delete] { try Self.roundTrips(value) }
        for value in QueryComparator.allCases { try Self.roundTrips(value) }
        for value in SystemFieldName.allCases { try Self.roundTrips(value) }
        for value in LogicalOperator.allCases { try Self.roundTrips(value) }
        for value in Reference.Action.allCases { try Self.roundTrips(value) }
        for value in ScalarType.allCases { try Self.roundTrips(value) }
        for value in ScalarType.allCases.flatMap({ [FieldType($0), FieldType($0, isList: true)] }) { try Self.roundTrips(value) }
        for value in Arbitrary.codes { try Self.roundTrips(value) }
    }

    // MARK: - Zones

    @Test func zones() async { await Self.check { Arbitrary.zone(&$0) } }
    @Test func zoneResults() async { await Self.check { Arbitrary.zoneResult(&$0) } }
    @Test func zonesResponses() async { await Self.check { Arbitrary.zonesResponse(&$0) } }
    @Test func lookupZonesRequests() async { await Self.check { Arbitrary.lookupZonesRequest(&$0) } }
    @Test func modifyZonesRequests() async { await Self.check { Arbitrary.modifyZonesRequest(&$0) } }
    @Test func zonesChangesRequests() async { await Self.check { Arbitrary.zonesChangesRequest(&$0) } }
    @Test func zonesChangesResponses() async { await Self.check { Arbitrary.zonesChangesResponse(&$0) } }

    // MARK: - Modifying and looking up records

    @Test func recordPayloads() async { await Self.check { Arbitrary.recordPayload(&$0) } }
    @Test func recordOperations() async { await Self.check { Arbitrary.recordOperation(&$0) } }
    @Test func recordsResponses() async { await Self.check { Arbitrary.recordsResponse(&$0) } }
    @Test func lookupRecordsRequests() async { await Self.check { Arbitrary.lookupRecordsRequest(&$0) } }

    /// A `records/modify` body round-trips, and written from its operations encoded one at a
    /// time (as the client sends it) it is the same bytes.
    @Test func modifyRecordsRequests() async {
        await propertyCheck(input: Generator(run: { Arbitrary.modifyRecordsRequest(&$0) })) { request in
            try Self.roundTrips(request)
            let plain = ModifyRecordsRequest(operations: request.operations, zoneID: request.zoneID, atomic: request.atomic)
            let encoded = EncodedModifyRecordsRequest(operations: request.operations.map(EncodedOperation.init),
                                                      zoneID: request.zoneID, atomic: request.atomic)
            let bytes = try JSONValueEncoder().encode(plain)
            #expect(try JSONValueEncoder().encode(encoded) == bytes, "\(String(decoding: bytes, as: UTF8.self))")
            #expect(encoded.request == plain)
        }
    }

    // MARK: - Subscriptions

    @Test func subscriptions() async { await Self.check { Arbitrary.subscription(&$0) } }
    @Test func modifySubscriptionsRequests() async { await Self.check { Arbitrary.modifySubscriptionsRequest(&$0) } }
    @Test func subscriptionResults() async { await Self.check { Arbitrary.subscriptionResult(&$0) } }
    @Test func subscriptionsResponses() async { await Self.check { Arbitrary.subscriptionsResponse(&$0) } }
    @Test func lookupSubscriptionsRequests() async { await Self.check { Arbitrary.lookupSubscriptionsRequest(&$0) } }
    @Test func pushTokenRequests() async { await Self.check { Arbitrary.pushTokenRequest(&$0) } }
    @Test func pushTokenResponses() async { await Self.check { Arbitrary.pushTokenResponse(&$0) } }

    // MARK: - Queries

    @Test func queryFilters() async { await Self.check { Arbitrary.queryFilter(&$0) } }
    @Test func querySorts() async { await Self.check { Arbitrary.querySort(&$0) } }
    @Test func queries() async { await Self.check { Arbitrary.query(&$0) } }
    @Test func queryRecordsRequests() async { await Self.check { Arbitrary.queryRecordsRequest(&$0) } }
    @Test func queryRecordsResponses() async { await Self.check { Arbitrary.queryRecordsResponse(&$0) } }

    // MARK: - Changes

    @Test func recordChangesRequests() async { await Self.check { Arbitrary.recordChangesRequest(&$0) } }
    @Test func zoneChanges() async { await Self.check(count: 200) { Arbitrary.zoneChanges(&$0) } }
    @Test func zoneChangesRequests() async { await Self.check { Arbitrary.zoneChangesRequest(&$0) } }
    @Test func zoneChangesResults() async { await Self.check { Arbitrary.zoneChangesResult(&$0) } }
    @Test func zoneChangesResponses() async { await Self.check { Arbitrary.zoneChangesResponse(&$0) } }
    @Test func databaseChangesRequests() async { await Self.check { Arbitrary.databaseChangesRequest(&$0) } }
    @Test func changedZones() async { await Self.check { Arbitrary.changedZone(&$0) } }
    @Test func databaseChanges() async { await Self.check { Arbitrary.databaseChanges(&$0) } }

    /// A page whose records keep their fields as stored text is written byte for byte as the
    /// page itself; in the compact form it expands back to CloudKit's; a client reads it back.
    @Test func storedZoneChanges() async {
        await propertyCheck(count: 200, input: Generator(run: { Arbitrary.compactablePage(&$0) })) { page in
            try Self.roundTrips(page)
            let cloudKit = try JSONValueEncoder().encode(page)
            let comment: Comment = "\(String(decoding: cloudKit, as: UTF8.self))"
            let entries = try page.records.map(Self.storedEntry)
            var stored = StoredZoneChanges(zoneID: page.zoneID, entries: entries, syncToken: page.syncToken, moreComing: page.moreComing,
                                           includedRecords: page.includedRecords)
            #expect(try JSONValueEncoder().encode(stored) == cloudKit, comment)
            #expect(try stored.decoded() == page, comment)
            #expect(try StoredZoneChanges.decode(cloudKit).decoded() == page, comment)

            stored.compact = true
            let compact = try JSONValue.parse(JSONValueEncoder().encode(stored))
            #expect(compact["recordSyncFieldTypes"] != nil, "not written in the compact form: \(compact)")
            #expect(ZoneChanges.expandingCompactPage(compact) == (try JSONValue.parse(cloudKit)), comment)
            // The client's reader takes either form to the same records and fields text.
            let compactText = try JSONValueEncoder().encode(stored)
            #expect(try StoredZoneChanges.decode(compactText).decoded() == page, comment)
            for skimming in [false, true] {
                let fromCompact = try StoredZoneChanges.decode(compactText, skimmingFields: skimming)
                let fromCloudKit = try StoredZoneChanges.decode(cloudKit, skimmingFields: skimming)
                #expect(fromCompact.entries.map(\.record) == fromCloudKit.entries.map(\.record), comment)
                #expect(fromCompact.entries.map(\.fieldsJSON) == fromCloudKit.entries.map(\.fieldsJSON), comment)
            }
        }
    }

    /// A page writes each record's own `zoneID`: the page's zone is written once and copied
    /// into the records in it; a record in another zone (the same name with another owner or
    /// none, another name) or in none is written as it is. The same bytes as the page written
    /// record by record.
    /// A version-2 compact page read by the client's reader: values by position, `null` for
    /// none; a record with more values than its type has fields, or a type CloudKit's form would
    /// refuse, is refused whether the fields are skimmed or decoded.
    @Test func compactPagesByPositionAreReadAndCheckedLikeCloudKitsForm() throws {
        func page(types: String, values: String) -> Data {
            Data(#"{"moreComing":false,"syncToken":"t","zoneID":{"zoneName":"Z"},"recordSyncFieldTypes":{"T":\#(types)},"recordSyncUsers":["_u"],"records":[["r1","T","1",[1,0],[1,0],\#(values)]]}"#.utf8)
        }
        let types = #"{"a":{"type":"STRING"},"b":{"recordSyncType":"BOOLEAN","type":"INT64"}}"#
        for skimming in [false, true] {
            let read = try StoredZoneChanges.decode(page(types: types, values: "[null,1]"), skimmingFields: skimming)
            #expect(read.entries.first?.fieldsJSON == #"{"b":{"recordSyncType":"BOOLEAN","type":"INT64","value":1}}"#)
            if skimming {
                #expect(read.entries.first?.fieldsSummary?.types.map { "\($0.field) \($0.type)" } == ["b BOOLEAN"])
            } else {
                #expect(read.entries.first?.record.fields == ["b": .boolean(true)])
            }
            #expect(throws: DecodingError.self) { try StoredZoneChanges.decode(page(types: types, values: #"["x",1,null]"#), skimmingFields: skimming) }
            #expect(throws: DecodingError.self) {
                try StoredZoneChanges.decode(page(types: #"{"a":{"type":"FOO","recordSyncType":"STRING"}}"#, values: #"["x"]"#), skimmingFields: skimming)
            }
        }
    }

    @Test func storedPagesWriteEachRecordsOwnZone() async {
        await propertyCheck(count: 200, input: Generator(run: { rng -> ZoneChanges in
            var page = Arbitrary.compactablePage(&rng)
            // The zone's name ends in Å, so that a record may name it spelled otherwise (A and a
            // combining ring: equal as Swift strings, not as bytes).
            page.zoneID.zoneName += "\u{00C5}"
            for index in page.records.indices where page.records[index].zoneID != nil { page.records[index].zoneID = page.zoneID }
            let zone = page.zoneID
            let others: [ZoneID?] = [nil, ZoneID(zoneName: zone.zoneName), ZoneID(zoneName: zone.zoneName, ownerRecordName: (zone.ownerRecordName ?? "") + "x"),
                                     ZoneID(zoneName: zone.zoneName + "x", ownerRecordName: zone.ownerRecordName),
                                     ZoneID(zoneName: zone.zoneName.dropLast() + "A\u{030A}", ownerRecordName: zone.ownerRecordName)]
            for index in page.records.indices where Arbitrary.bool(&rng) { page.records[index].zoneID = Arbitrary.pick(&rng, others) }
            return page
        })) { page in
            let written = try JSONValueEncoder().encode(StoredZoneChanges(page))
            #expect(written == (try JSONValueEncoder().encode(page)), "\(String(decoding: written, as: UTF8.self))")
        }
    }

    /// A field's reader reads the common values straight (``FieldValue/init(direct:)``) and the
    /// rest as JSON through ``FieldValue/init(json:type:numbersMayBeStrings:)``: on generated
    /// field objects, references odd and plain, numbers as strings, repeated and unknown members
    /// among them, both give the same value or the same error.
    @Test func fieldReadersAgree() async {
        await propertyCheck(count: 2000, input: Generator(run: { Arbitrary.fieldText(&$0) })) { text in
            /// The value read, or the error's description.
            func outcome(_ read: () throws -> FieldValue) -> Result<FieldValue, Failure> {
                do { return .success(try read()) } catch { return .failure(Failure(description: "\(error)")) }
            }
            var bytes = Array(text.utf8)
            let direct = bytes.withUnsafeBufferPointer { buffer in outcome { try JSONParser.decodeDirectly(FieldValue.self, from: buffer) } }
            let throughJSON = bytes.withUnsafeBufferPointer { buffer in
                outcome {
                    let raw = try JSONParser.decodeDirectly(RawFieldValue.self, from: buffer)
                    do {
                        return try FieldValue(json: raw.value, type: raw.type, numbersMayBeStrings: raw.type != nil)
                    } catch let error as RecordSyncError {
                        throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: error.reason))
                    }
                }
            }
            bytes.removeAll()
            #expect(direct == throughJSON, "\(text)")
        }
    }

    /// An error as ``fieldReadersAgree()`` compares them: by description.
    struct Failure: Error, Equatable {
        var description: String
    }

    /// A `records/modify` answer whose saved records carry their stored fields text is written
    /// byte for byte as the one whose fields are encoded again, with numbers as strings too
    /// (the text is then not used).
    @Test func recordsResponsesWithStoredFields() async {
        await propertyCheck(count: 200, input: Generator(run: { Arbitrary.recordsResponse(&$0) })) { response in
            var stored = response
            stored.storedFields = try response.records.map { result in
                guard case .success(let record, _) = result, !record.deleted else { return nil }
                return try JSONValueEncoder().encodeFieldsText(record.fields)
            }
            // (An error's uuid is made afresh by each write.)
            let expected = Self.withoutErrorUUIDs(try JSONValueEncoder().encode(response))
            #expect(Self.withoutErrorUUIDs(try JSONValueEncoder().encode(stored)) == expected)
            let asStrings = try WireForm.$numbersAsStrings.withValue(true) { try JSONValueEncoder().encode(response) }
            #expect(Self.withoutErrorUUIDs(try WireForm.$numbersAsStrings.withValue(true) { try JSONValueEncoder().encode(stored) })
                    == Self.withoutErrorUUIDs(asStrings))
        }
    }

    /// `record` as a store reads it: its fields as their stored text (a tombstone has none).
    static func storedEntry(_ record: Record) throws -> StoredZoneChanges.Entry {
        guard !record.deleted else { return StoredZoneChanges.Entry(record: record) }
        var bare = record
        bare.fields = [:]
        return StoredZoneChanges.Entry(record: bare, fieldsJSON: try JSONValueEncoder().encodeFieldsText(record.fields))
    }

    // MARK: - Users

    @Test func userIdentities() async { await Self.check { Arbitrary.userIdentity(&$0) } }
    @Test func idTokenSignInRequests() async { await Self.check { Arbitrary.idTokenSignInRequest(&$0) } }
    @Test func signInResponses() async { await Self.check { Arbitrary.signInResponse(&$0) } }
    @Test func accountBodies() async {
        await Self.check { SignUpRequest(email: Arbitrary.string(&$0), password: Arbitrary.string(&$0), invitation: Arbitrary.maybe(&$0, Arbitrary.string)) }
        await Self.check {
            SignUpVerifyRequest(email: Arbitrary.string(&$0), code: Arbitrary.string(&$0), deviceName: Arbitrary.maybe(&$0, Arbitrary.string),
                                givenName: Arbitrary.maybe(&$0, Arbitrary.string), familyName: Arbitrary.maybe(&$0, Arbitrary.string))
        }
        await Self.check { PasswordSignInRequest(email: Arbitrary.string(&$0), password: Arbitrary.string(&$0), deviceName: Arbitrary.maybe(&$0, Arbitrary.string)) }
        await Self.check { PasswordChangeRequest(password: Arbitrary.string(&$0), newPassword: Arbitrary.string(&$0)) }
        await Self.check { PasswordChangeResponse(revokedTokens: Int(Arbitrary.int64(&$0) % 1000)) }
        await Self.check { ResetRequest(email: Arbitrary.string(&$0)) }
        await Self.check {
            ResetCompleteRequest(email: Arbitrary.string(&$0), code: Arbitrary.string(&$0), newPassword: Arbitrary.string(&$0),
                                 deviceName: Arbitrary.maybe(&$0, Arbitrary.string))
        }
        await Self.check { AccountDeleteRequest(password: Arbitrary.maybe(&$0, Arbitrary.string)) }
    }
    @Test func userLookupInfos() async { await Self.check { Arbitrary.userLookupInfo(&$0) } }
    @Test func userNameComponents() async { await Self.check { Arbitrary.userNameComponents(&$0) } }
    @Test func userIdentityInfos() async { await Self.check { Arbitrary.userIdentityInfo(&$0) } }
    @Test func userIdentitiesResponses() async { await Self.check { Arbitrary.userIdentitiesResponse(&$0) } }
    @Test func callerIdentityResponses() async { await Self.check { Arbitrary.callerIdentityResponse(&$0) } }
    @Test func discoverUsersRequests() async { await Self.check { Arbitrary.discoverUsersRequest(&$0) } }
    @Test func lookupUsersRequests() async { await Self.check { Arbitrary.lookupUsersRequest(&$0) } }
    @Test func usersResponses() async { await Self.check { Arbitrary.usersResponse(&$0) } }
    @Test func userDiscoverabilityRequests() async { await Self.check { Arbitrary.userDiscoverabilityRequest(&$0) } }

    // MARK: - Backlinks, notifications and assets

    @Test func backlinksRequests() async { await Self.check { Arbitrary.backlinksRequest(&$0) } }
    @Test func backlinks() async { await Self.check { Arbitrary.backlink(&$0) } }
    @Test func backlinksResponses() async { await Self.check { Arbitrary.backlinksResponse(&$0) } }
    @Test func zoneNotifications() async { await Self.check { Arbitrary.zoneNotification(&$0) } }
    @Test func assetUploadRequests() async { await Self.check { Arbitrary.assetUploadRequest(&$0) } }
    @Test func assetUploadResponses() async { await Self.check { Arbitrary.assetUploadResponse(&$0) } }
    @Test func assetUploadReceipts() async { await Self.check { Arbitrary.assetUploadReceipt(&$0) } }
    @Test func assetRereferenceRequests() async { await Self.check { Arbitrary.assetRereferenceRequest(&$0) } }
    @Test func assetRereferenceResponses() async { await Self.check { Arbitrary.assetRereferenceResponse(&$0) } }
    @Test func assets() async { await Self.check { Arbitrary.asset(&$0) } }
}

/// Generators of wire values whose JSON reads back equal, composed by hand. Each draws its
/// randomness from `rng`; an optional is nil about a third of the time (``maybe(_:_:)``).
enum Arbitrary {
    typealias RNG = any SeededRandomNumberGenerator

    // MARK: - Building blocks

    static func bool(_ rng: inout RNG) -> Bool { Bool.random(using: &rng) }

    static func pick<T>(_ rng: inout RNG, _ options: [T]) -> T { options.randomElement(using: &rng)! }

    /// `make`'s value, or nil about a third of the time.
    static func maybe<T>(_ rng: inout RNG, _ make: (inout RNG) -> T) -> T? {
        Int.random(in: 0..<3, using: &rng) == 0 ? nil : make(&rng)
    }

    /// Between `counts.lowerBound` and `counts.upperBound` values of `make`.
    static func array<T>(_ rng: inout RNG, _ counts: ClosedRange<Int>, _ make: (inout RNG) -> T) -> [T] {
        var elements: [T] = []
        for _ in 0..<Int.random(in: counts, using: &rng) { elements.append(make(&rng)) }
        return elements
    }

    /// Pieces of text: plain, what JSON escapes (quote, backslash, control characters), and
    /// beyond ASCII.
    static let pieces = ["a", "Zz", "42", " ", "_", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1}", "\u{1F}", "\u{7F}",
                         "é", "ß", "日本", "😀", "\u{1F469}\u{200D}\u{1F4BB}", "{\"k\":[1]}"]
    /// The pieces a name may hold: no control characters (``NameRules/problem(withName:kind:)``).
    static let namePieces = pieces.filter { !NameRules.containsControlCharacter($0) }

    /// Any text, the empty one included.
    static func string(_ rng: inout RNG) -> String {
        var text = ""
        for _ in 0..<Int.random(in: 0...5, using: &rng) { text += pick(&rng, pieces) }
        return text
    }

    /// A name a reference may hold: non-empty, no control characters, far below 255 bytes.
    static func name(_ rng: inout RNG) -> String {
        var text = pick(&rng, namePieces)
        for _ in 0..<Int.random(in: 0...4, using: &rng) { text += pick(&rng, namePieces) }
        return text
    }

    /// Field names, among them the members of a field's own object (which the compact form's
    /// writer must tell from them) and text that needs escaping.
    static let fieldNames = ["title", "year", "price", "artist", "tags", "value", "type", "", "é", "with \"quote\"", "back\\slash",
                             "line\nbreak", "😀"]

    static func fieldName(_ rng: inout RNG) -> String { pick(&rng, fieldNames) }

    /// A few field names (`desiredKeys`, `include`).
    static func keys(_ rng: inout RNG) -> [String] { array(&rng, 0...3, fieldName) }

    static func int64(_ rng: inout RNG) -> Int64 {
        let edges: [Int64] = [0, 1, -1, .min, .max, 1 << 53, -(1 << 53) - 1]
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: return pick(&rng, edges)
        case 1: return Int64.random(in: -1000...1000, using: &rng)
        default: return Int64.random(in: .min ... .max, using: &rng)
        }
    }

    static func int(_ rng: inout RNG) -> Int { Int(int64(&rng)) }

    /// A finite double. With `whole`, whole numbers too (2.0, 1e16, 1e300), which only a reader
    /// that knows the value's type (a `DOUBLE` or `LOCATION` field, a `Double` property) reads
    /// back as doubles: in JSON kept as it is, Foundation's decoder reads `2.0` as the integer 2.
    static func double(_ rng: inout RNG, whole: Bool = true) -> Double {
        let fractions: [Double] = [0.5, -0.5, 0.1, -123.456, .pi, 1e-7, 2.5e-300, 1.0000000000000002]
        let wholes: [Double] = [0, 2, -1, 1e15, 1e16, 9_007_199_254_740_992, 1e300, -1e300, .greatestFiniteMagnitude]
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return pick(&rng, fractions)
        case 1 where whole: return pick(&rng, wholes)
        case 2 where whole:
            // Any finite bit pattern: subnormals and the largest exponents too.
            let bits = Double(bitPattern: UInt64.random(in: .min ... .max, using: &rng))
            return bits.isFinite ? bits : 1e300
        default:
            let value = Double.random(in: -1e6...1e6, using: &rng)
            return whole || value.rounded() != value ? value : 0.5
        }
    }

    static func data(_ rng: inout RNG) -> Data {
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 0...12, using: &rng) { bytes.append(UInt8.random(in: 0...255, using: &rng)) }
        return Data(bytes)
    }

    /// JSON kept as it is (no type says how to read it): null, booleans, integers, doubles that
    /// are not whole (Foundation's decoder reads `2.0` as the integer 2), strings, and, while
    /// `depth` allows, arrays and objects of them.
    static func json(_ rng: inout RNG, depth: Int = 2) -> JSONValue {
        switch Int.random(in: 0..<(depth > 0 ? 7 : 5), using: &rng) {
        case 0: return .null
        case 1: return .bool(bool(&rng))
        case 2: return .int(int64(&rng))
        case 3: return .double(double(&rng, whole: false))
        case 4: return .string(string(&rng))
        default: return jsonContainer(&rng, depth: depth)
        }
    }

    /// A JSON array or object of ``json(_:depth:)`` values.
    static func jsonContainer(_ rng: inout RNG, depth: Int = 2) -> JSONValue {
        if bool(&rng) { return .array(array(&rng, 0...3) { json(&$0, depth: depth - 1) }) }
        var members: [String: JSONValue] = [:]
        for _ in 0..<Int.random(in: 0...3, using: &rng) {
            let key = string(&rng)
            members[key] = json(&rng, depth: depth - 1)
        }
        return .object(members)
    }

    // MARK: - Records and what they hold

    static func zoneID(_ rng: inout RNG) -> ZoneID { ZoneID(zoneName: string(&rng), ownerRecordName: maybe(&rng, string)) }

    static func recordID(_ rng: inout RNG) -> RecordID { RecordID(recordName: string(&rng), zoneID: zoneID(&rng)) }

    static func recordZone(_ rng: inout RNG) -> RecordZone { RecordZone(zoneID: zoneID(&rng)) }

    static func stamp(_ rng: inout RNG) -> Stamp {
        Stamp(timestamp: int64(&rng), userRecordName: string(&rng), deviceID: maybe(&rng, string))
    }

    static func reference(_ rng: inout RNG) -> Reference {
        Reference(recordName: name(&rng), zoneID: maybe(&rng, zoneID), action: pick(&rng, Reference.Action.allCases))
    }

    /// A latitude or longitude within ±`limit`; its ends and 0 among them when whole numbers
    /// may be (``double(_:whole:)``).
    static func coordinate(_ rng: inout RNG, within limit: Double, whole: Bool) -> Double {
        if whole, Int.random(in: 0..<4, using: &rng) == 0 { return pick(&rng, [-limit, 0, limit]) }
        let value = Double.random(in: -limit...limit, using: &rng)
        return whole || value.rounded() != value ? value : 0.5
    }

    /// A location (`wholeDoubles` as for ``double(_:whole:)``). Its `timestamp` is read through
    /// a `Double` (``FieldValue/init(json:type:numbersMayBeStrings:)``), so only milliseconds
    /// within ±2^53 come back exactly.
    static func location(_ rng: inout RNG, wholeDoubles: Bool = true) -> Location {
        func measure(_ rng: inout RNG) -> Double? { maybe(&rng) { double(&$0, whole: wholeDoubles) } }
        let exact: Int64 = 1 << 53
        let latitude = coordinate(&rng, within: 90, whole: wholeDoubles)
        let longitude = coordinate(&rng, within: 180, whole: wholeDoubles)
        return Location(latitude: latitude, longitude: longitude, horizontalAccuracy: measure(&rng), verticalAccuracy: measure(&rng),
                        altitude: measure(&rng), speed: measure(&rng), course: measure(&rng),
                        timestamp: maybe(&rng) { Int64.random(in: -exact...exact, using: &$0) })
    }

    /// An `ASSETID` value as uploads make them: an object of strings and integers only (JSON kept
    /// as it is, so no whole doubles, see ``json(_:depth:)``).
    static func assetValue(_ rng: inout RNG) -> JSONValue {
        var members: [String: JSONValue] = ["fileChecksum": .string(string(&rng)), "size": .int(int64(&rng))]
        members["receipt"] = maybe(&rng) { JSONValue.string(StoredAsset.receiptPrefix + string(&$0)) }
        for key in ["wrappingKey", "referenceChecksum", "downloadURL"] {
            members[key] = maybe(&rng) { JSONValue.string(string(&$0)) }
        }
        return .object(members)
    }

    /// The text of a field object as any client might send it: `value` (a value of a type, any
    /// JSON, a reference plain or odd, a number as a string; now and then twice or missing),
    /// `type` and `recordSyncType` (either, both, neither, null or unknown), unknown members, in
    /// any order.
    static func fieldText(_ rng: inout RNG) -> String {
        func text(_ value: JSONValue) -> String {
            var writer = JSONWriter(storing: ())
            try! writer.write(value)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        func referenceText(_ rng: inout RNG) -> String {
            var members: [String] = []
            let names = [text(.string(name(&rng))), "\"\"", "5", "null", "\"a\\u0000b\"", "\"\(String(repeating: "n", count: 300))\""]
            if Int.random(in: 0..<8, using: &rng) != 0 { members.append("\"recordName\":" + pick(&rng, names)) }
            let actions = ["\"NONE\"", "\"DELETE_SELF\"", "\"VALIDATE\"", "\"NULLIFY\"", "\"bogus\"", "null", "3"]
            if bool(&rng) { members.append("\"action\":" + pick(&rng, actions)) }
            if Int.random(in: 0..<4, using: &rng) == 0 { members.append("\"recordSyncAction\":" + pick(&rng, actions)) }
            let zones = ["null", "{\"zoneName\":\"z\"}", "{\"zoneName\":\"z\",\"ownerRecordName\":\"o\"}", "{\"zoneName\":5}",
                         "{\"zoneName\":\"z\",\"ownerRecordName\":5}", "{\"zoneName\":\"z\",\"ownerRecordName\":null,\"x\":1}",
                         "{\"ownerRecordName\":\"o\"}", "\"z\"", "[]"]
            if bool(&rng) { members.append("\"zoneID\":" + pick(&rng, zones)) }
            if Int.random(in: 0..<6, using: &rng) == 0 { members.append("\"other\":" + text(json(&rng, depth: 1))) }
            if Int.random(in: 0..<10, using: &rng) == 0, let first = members.first { members.append(first) }
            members.shuffle(using: &rng)
            return "{" + members.joined(separator: ",") + "}"
        }
        func valueText(_ rng: inout RNG) -> String {
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: return text(fieldValue(&rng, wholeDoubles: false).json)
            case 1: return text(json(&rng))
            case 2, 3: return referenceText(&rng)
            case 4: return text(.string(pick(&rng, ["12", "-3", "1.5", "1e3", "x", "", "9223372036854775808", "true"])))
            default: return pick(&rng, ["0", "1", "2", "-1", "2.0", "1.5", "1e400", "true", "false", "null", "[]", "[1,2.5]", "[\"a\"]", "{}"])
            }
        }
        func typeName(_ rng: inout RNG) -> String {
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: return "null"
            case 1: return pick(&rng, ["\"FOO\"", "3", "\"\""])
            default: return text(.string(fieldType(&rng).rawValue))
            }
        }
        var members: [String] = []
        if Int.random(in: 0..<10, using: &rng) != 0 { members.append("\"value\":" + valueText(&rng)) }
        if Int.random(in: 0..<8, using: &rng) == 0 { members.append("\"value\":" + valueText(&rng)) }
        if Int.random(in: 0..<3, using: &rng) != 0 { members.append("\"type\":" + typeName(&rng)) }
        if Int.random(in: 0..<5, using: &rng) == 0 { members.append("\"recordSyncType\":" + typeName(&rng)) }
        if Int.random(in: 0..<6, using: &rng) == 0 { members.append("\"other\":" + text(json(&rng, depth: 1))) }
        members.shuffle(using: &rng)
        return "{" + members.joined(separator: ",") + "}"
    }

    static func idTokenSignInRequest(_ rng: inout RNG) -> IDTokenSignInRequest {
        IDTokenSignInRequest(idToken: string(&rng), provider: maybe(&rng, string), nonce: maybe(&rng, string), deviceName: maybe(&rng, string),
                             givenName: maybe(&rng, string), familyName: maybe(&rng, string))
    }

    static func signInResponse(_ rng: inout RNG) -> SignInResponse {
        SignInResponse(ckWebAuthToken: string(&rng), userRecordName: string(&rng), expires: int64(&rng), created: bool(&rng),
                       tokenName: string(&rng))
    }

    /// Any type a field may have: every scalar, a list a quarter of the time.
    static func fieldType(_ rng: inout RNG) -> FieldType {
        FieldType(pick(&rng, ScalarType.allCases), isList: Int.random(in: 0..<4, using: &rng) == 0)
    }

    /// A field value of any type (`wholeDoubles` as for ``double(_:whole:)``).
    static func fieldValue(_ rng: inout RNG, wholeDoubles: Bool = true) -> FieldValue {
        let type = fieldType(&rng)
        return value(&rng, of: type, wholeDoubles: wholeDoubles)
    }

    /// A value of `type`; a list holds 0 to 4 elements.
    static func value(_ rng: inout RNG, of type: FieldType, wholeDoubles: Bool) -> FieldValue {
        guard type.isList else { return scalar(&rng, type.scalar, wholeDoubles: wholeDoubles) }
        return .list(type.scalar, array(&rng, 0...4) { scalar(&$0, type.scalar, wholeDoubles: wholeDoubles) })
    }

    static func scalar(_ rng: inout RNG, _ type: ScalarType, wholeDoubles: Bool) -> FieldValue {
        switch type {
        case .string: return .string(string(&rng))
        case .int64: return .int64(int64(&rng))
        case .double: return .double(double(&rng, whole: wholeDoubles))
        case .timestamp: return .timestamp(int64(&rng))
        case .bytes: return .bytes(data(&rng))
        case .reference: return .reference(reference(&rng))
        case .location: return .location(location(&rng, wholeDoubles: wholeDoubles))
        case .asset: return .asset(assetValue(&rng))
        case .boolean: return .boolean(bool(&rng))
        case .nested: return .nested(jsonContainer(&rng))
        }
    }

    /// Up to five fields of any types.
    static func fieldValues(_ rng: inout RNG) -> [String: FieldValue] {
        var fields: [String: FieldValue] = [:]
        for _ in 0..<Int.random(in: 0...5, using: &rng) {
            let field = fieldName(&rng)
            fields[field] = fieldValue(&rng)
        }
        return fields
    }

    /// A field as a client sends it: typed, or untyped JSON. Its value is kept as JSON, so a
    /// typed one's doubles are never whole (see ``json(_:depth:)``).
    static func rawFieldValue(_ rng: inout RNG) -> RawFieldValue {
        if bool(&rng) { return RawFieldValue(fieldValue(&rng, wholeDoubles: false)) }
        return RawFieldValue(value: json(&rng))
    }

    static func rawFields(_ rng: inout RNG) -> [String: RawFieldValue] {
        var fields: [String: RawFieldValue] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            let field = fieldName(&rng)
            fields[field] = rawFieldValue(&rng)
        }
        return fields
    }

    static func record(_ rng: inout RNG) -> Record {
        let type = string(&rng)
        let fields = fieldValues(&rng)
        let zone = maybe(&rng, zoneID)
        return makeRecord(&rng, type: type, fields: fields, zone: zone)
    }

    /// A record of `type` in `zone`: saved with `fields`, or a fifth of the time deleted. A
    /// tombstone has no fields, stamps or change tag (its writer drops them).
    static func makeRecord(_ rng: inout RNG, type: String, fields: [String: FieldValue], zone: ZoneID?) -> Record {
        let recordName = string(&rng)
        if Int.random(in: 0..<5, using: &rng) == 0 {
            return Record(recordName: recordName, recordType: type, zoneID: zone, deleted: true)
        }
        return Record(recordName: recordName, recordType: type, zoneID: zone, recordChangeTag: maybe(&rng, string), fields: fields,
                      created: maybe(&rng, stamp), modified: maybe(&rng, stamp))
    }

    /// Every code RecordSync knows, and one it does not (yet): it travels as `INTERNAL_ERROR`
    /// with itself beside.
    static let codes = ServerErrorCode.allKnown + [ServerErrorCode(rawValue: "FUTURE_CODE")]

    /// An error as the wire carries it: its `clientRecord` and `ancestorRecord` stay nil, as
    /// they are not on the wire (``ErrorBody``).
    static func recordSyncError(_ rng: inout RNG) -> RecordSyncError {
        let code = pick(&rng, codes)
        let reason = string(&rng)
        return RecordSyncError(code, reason, recordName: maybe(&rng, string), zoneID: maybe(&rng, zoneID),
                               retryAfter: maybe(&rng) { double(&$0) }, serverRecord: maybe(&rng, record), redirectURL: maybe(&rng, string))
    }

    /// An error body as any release may write one: codes that need not agree, and any `uuid`.
    static func errorBody(_ rng: inout RNG) -> ErrorBody {
        var body = ErrorBody(recordSyncError(&rng))
        body.recordSyncErrorCode = maybe(&rng) { pick(&$0, codes) }
        body.extensionErrorCode = maybe(&rng) { pick(&$0, codes) }
        body.subscriptionID = maybe(&rng, string)
        body.uuid = string(&rng)
        return body
    }

    static func recordResult(_ rng: inout RNG) -> RecordResult {
        if Int.random(in: 0..<4, using: &rng) == 0 { return .failure(recordSyncError(&rng)) }
        let saved = record(&rng)
        return .success(saved, cascadedRecordNames: maybe(&rng) { array(&$0, 0...3, string) })
    }

    static func continuationMarker(_ rng: inout RNG) -> ContinuationMarker {
        ContinuationMarker(query: string(&rng), values: array(&rng, 0...3) { json(&$0) }, zone: int64(&rng), name: string(&rng))
    }

    // MARK: - Zones

    static func zone(_ rng: inout RNG) -> Zone {
        Zone(zoneID: zoneID(&rng), syncToken: maybe(&rng, string), atomic: maybe(&rng, bool), deleted: maybe(&rng, bool))
    }

    static func zoneResult(_ rng: inout RNG) -> ZoneResult {
        bool(&rng) ? .success(zone(&rng)) : .failure(recordSyncError(&rng))
    }

    static func zonesResponse(_ rng: inout RNG) -> ZonesResponse { ZonesResponse(zones: array(&rng, 0...3, zoneResult)) }

    static func lookupZonesRequest(_ rng: inout RNG) -> LookupZonesRequest { LookupZonesRequest(zones: array(&rng, 0...3, zoneID)) }

    static func modifyZonesRequest(_ rng: inout RNG) -> ModifyZonesRequest {
        let kinds: [ModifyZonesRequest.OperationType] = [.create, .delete]
        return ModifyZonesRequest(operations: array(&rng, 0...3) { ModifyZonesRequest.Operation(pick(&$0, kinds), zoneID(&$0)) })
    }

    static func zonesChangesRequest(_ rng: inout RNG) -> ZonesChangesRequest {
        var request = ZonesChangesRequest(metaSyncToken: maybe(&rng, string), resultsLimit: maybe(&rng, int))
        request.syncToken = maybe(&rng, string)
        return request
    }

    static func zonesChangesResponse(_ rng: inout RNG) -> ZonesChangesResponse {
        var response = ZonesChangesResponse(zones: array(&rng, 0...3, zone), token: string(&rng), moreComing: bool(&rng))
        if bool(&rng) { response.syncToken = string(&rng) }
        return response
    }

    // MARK: - Modifying and looking up records

    static func recordPayload(_ rng: inout RNG) -> RecordPayload {
        RecordPayload(recordName: maybe(&rng, string), recordType: maybe(&rng, string), recordChangeTag: maybe(&rng, string),
                      fields: maybe(&rng, rawFields))
    }

    static func recordOperation(_ rng: inout RNG) -> RecordOperation {
        RecordOperation(pick(&rng, OperationType.allCases), recordPayload(&rng), desiredKeys: maybe(&rng, keys))
    }

    static func modifyRecordsRequest(_ rng: inout RNG) -> ModifyRecordsRequest {
        var request = ModifyRecordsRequest(operations: array(&rng, 0...4, recordOperation), zoneID: maybe(&rng, zoneID),
                                           atomic: maybe(&rng, bool), desiredKeys: maybe(&rng, keys))
        request.numbersAsStrings = maybe(&rng, bool)
        return request
    }

    static func recordsResponse(_ rng: inout RNG) -> RecordsResponse {
        RecordsResponse(records: array(&rng, 0...4, recordResult), includedRecords: maybe(&rng) { array(&$0, 0...2, record) })
    }

    static func lookupRecordsRequest(_ rng: inout RNG) -> LookupRecordsRequest {
        let entries = array(&rng, 0...3) { LookupRecordsRequest.Entry(recordName: string(&$0)) }
        var request = LookupRecordsRequest(records: entries, zoneID: maybe(&rng, zoneID), desiredKeys: maybe(&rng, keys),
                                           include: maybe(&rng, keys), includeDepth: maybe(&rng, int))
        request.numbersAsStrings = maybe(&rng, bool)
        return request
    }

    // MARK: - Subscriptions

    static func subscription(_ rng: inout RNG) -> Subscription {
        let types = ["query", "zone"], events = ["create", "update", "delete"]
        let subscriptionID = string(&rng)
        let subscriptionType = maybe(&rng) { pick(&$0, types) }
        let asked = maybe(&rng, query)
        let zone = maybe(&rng, zoneID)
        let firesOn = maybe(&rng) { array(&$0, 0...3) { pick(&$0, events) } }
        // Never `.some(.null)`, which is written as no member.
        let notificationInfo = maybe(&rng) { jsonContainer(&$0) }
        return Subscription(subscriptionID: subscriptionID, subscriptionType: subscriptionType, query: asked, zoneID: zone, firesOn: firesOn,
                            firesOnce: maybe(&rng, bool), zoneWide: maybe(&rng, bool), notificationInfo: notificationInfo)
    }

    static func modifySubscriptionsRequest(_ rng: inout RNG) -> ModifySubscriptionsRequest {
        let kinds = ["create", "update", "delete"]
        return ModifySubscriptionsRequest(operations: array(&rng, 0...3) {
            ModifySubscriptionsRequest.Operation(operationType: pick(&$0, kinds), subscription: subscription(&$0))
        })
    }

    static func subscriptionResult(_ rng: inout RNG) -> SubscriptionResult {
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: return .success(subscription(&rng))
        case 1: return .deleted(string(&rng))
        default:
            let subscriptionID = string(&rng)
            return .failure(subscriptionID, recordSyncError(&rng))
        }
    }

    static func subscriptionsResponse(_ rng: inout RNG) -> SubscriptionsResponse {
        SubscriptionsResponse(subscriptions: array(&rng, 0...3, subscriptionResult))
    }

    static func lookupSubscriptionsRequest(_ rng: inout RNG) -> LookupSubscriptionsRequest {
        LookupSubscriptionsRequest(subscriptions: array(&rng, 0...3) { LookupSubscriptionsRequest.Entry(subscriptionID: string(&$0)) })
    }

    static func pushTokenRequest(_ rng: inout RNG) -> PushTokenRequest {
        PushTokenRequest(apnsEnvironment: maybe(&rng) { pick(&$0, ["development", "production"]) }, apnsToken: maybe(&rng, string))
    }

    static func pushTokenResponse(_ rng: inout RNG) -> PushTokenResponse {
        PushTokenResponse(apnsEnvironment: string(&rng), apnsToken: string(&rng), webcourierURL: string(&rng))
    }

    // MARK: - Queries

    /// A comparison on a record field or a system field, or (while `depth` allows) a compound
    /// filter joining others.
    static func queryFilter(_ rng: inout RNG, depth: Int = 2) -> QueryFilter {
        if depth > 0, Int.random(in: 0..<4, using: &rng) == 0 {
            let join = pick(&rng, LogicalOperator.allCases)
            return QueryFilter(join, array(&rng, 0...3) { queryFilter(&$0, depth: depth - 1) })
        }
        let comparator = pick(&rng, QueryComparator.allCases)
        let value = rawFieldValue(&rng)
        let options = maybe(&rng, string)
        var filter = bool(&rng)
            ? QueryFilter(fieldName(&rng), comparator, value, options: options)
            : QueryFilter(system: pick(&rng, SystemFieldName.allCases), comparator, value, options: options)
        filter.distance = maybe(&rng) { double(&$0) }
        return filter
    }

    static func querySort(_ rng: inout RNG) -> QuerySort {
        var sort = QuerySort(system: .recordName)
        sort.fieldName = maybe(&rng, fieldName)
        sort.systemFieldName = maybe(&rng) { pick(&$0, SystemFieldName.allCases) }
        sort.ascending = maybe(&rng, bool)
        sort.relativeLocation = maybe(&rng) { location(&$0) }
        return sort
    }

    static func query(_ rng: inout RNG) -> Query {
        let recordType = string(&rng)
        let filters = maybe(&rng) { array(&$0, 0...3) { queryFilter(&$0) } }
        return Query(recordType: recordType, filterBy: filters, sortBy: maybe(&rng) { array(&$0, 0...2, querySort) })
    }

    static func queryRecordsRequest(_ rng: inout RNG) -> QueryRecordsRequest {
        let asked = query(&rng)
        var request = QueryRecordsRequest(query: asked, zoneID: maybe(&rng, zoneID), resultsLimit: maybe(&rng, int),
                                          continuationMarker: maybe(&rng, string), desiredKeys: maybe(&rng, keys), zoneWide: maybe(&rng, bool),
                                          include: maybe(&rng, keys), includeDepth: maybe(&rng, int))
        request.numbersAsStrings = maybe(&rng, bool)
        return request
    }

    static func queryRecordsResponse(_ rng: inout RNG) -> QueryRecordsResponse {
        QueryRecordsResponse(records: array(&rng, 0...4, record), continuationMarker: maybe(&rng, string),
                             includedRecords: maybe(&rng) { array(&$0, 0...2, record) })
    }

    // MARK: - Changes

    static func recordChangesRequest(_ rng: inout RNG) -> RecordChangesRequest {
        var request = RecordChangesRequest(zoneID: maybe(&rng, zoneID), syncToken: maybe(&rng, string), resultsLimit: maybe(&rng, int),
                                           desiredKeys: maybe(&rng, keys), desiredRecordTypes: maybe(&rng) { array(&$0, 0...3, string) },
                                           include: maybe(&rng, keys), includeDepth: maybe(&rng, int))
        request.numbersAsStrings = maybe(&rng, bool)
        request.recordSyncCompact = maybe(&rng, bool)
        return request
    }

    static func zoneChanges(_ rng: inout RNG) -> ZoneChanges {
        ZoneChanges(zoneID: zoneID(&rng), records: array(&rng, 0...5, record), syncToken: string(&rng), moreComing: bool(&rng),
                    includedRecords: maybe(&rng) { array(&$0, 0...2, record) })
    }

    /// A page the compact form holds: its records all in its zone (the compact form gives them
    /// the page's), and each record type's fields always of one type, as a zone's schema keeps
    /// them (else the page is written in CloudKit's form). Tags and stamps may be missing: the
    /// compact form writes `null` for them.
    static func compactablePage(_ rng: inout RNG) -> ZoneChanges {
        let zone = zoneID(&rng)
        var schema: [(type: String, fields: [(name: String, type: FieldType)])] = []
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let recordType = string(&rng)
            guard !schema.contains(where: { $0.type == recordType }) else { continue }
            var fields: [(name: String, type: FieldType)] = []
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                let field = fieldName(&rng)
                if !fields.contains(where: { $0.name == field }) { fields.append((field, fieldType(&rng))) }
            }
            schema.append((recordType, fields))
        }
        var records: [Record] = []
        for _ in 0..<Int.random(in: 0...6, using: &rng) {
            let (recordType, fieldTypes) = pick(&rng, schema)
            var values: [String: FieldValue] = [:]
            for field in fieldTypes where bool(&rng) { values[field.name] = value(&rng, of: field.type, wholeDoubles: true) }
            records.append(makeRecord(&rng, type: recordType, fields: values, zone: zone))
        }
        return ZoneChanges(zoneID: zone, records: records, syncToken: string(&rng), moreComing: bool(&rng),
                           includedRecords: maybe(&rng) { array(&$0, 0...2, record) })
    }

    static func zoneChangesRequest(_ rng: inout RNG) -> ZoneChangesRequest {
        var request = ZoneChangesRequest(zones: array(&rng, 0...3, recordChangesRequest))
        request.numbersAsStrings = maybe(&rng, bool)
        request.recordSyncCompact = maybe(&rng, bool)
        return request
    }

    static func zoneChangesResult(_ rng: inout RNG) -> ZoneChangesResult {
        bool(&rng) ? .success(zoneChanges(&rng)) : .failure(recordSyncError(&rng))
    }

    static func zoneChangesResponse(_ rng: inout RNG) -> ZoneChangesResponse {
        ZoneChangesResponse(zones: array(&rng, 0...3, zoneChangesResult))
    }

    static func databaseChangesRequest(_ rng: inout RNG) -> DatabaseChangesRequest {
        DatabaseChangesRequest(syncToken: maybe(&rng, string), resultsLimit: maybe(&rng, int))
    }

    static func changedZone(_ rng: inout RNG) -> ChangedZone { ChangedZone(zoneID: zoneID(&rng), deleted: maybe(&rng, bool)) }

    static func databaseChanges(_ rng: inout RNG) -> DatabaseChanges {
        DatabaseChanges(zones: array(&rng, 0...3, changedZone), syncToken: string(&rng), moreComing: bool(&rng))
    }

    // MARK: - Users

    static func userIdentity(_ rng: inout RNG) -> UserIdentity {
        UserIdentity(userRecordName: string(&rng), firstName: maybe(&rng, string), lastName: maybe(&rng, string),
                     emailAddress: maybe(&rng, string), userName: maybe(&rng, string))
    }

    static func userLookupInfo(_ rng: inout RNG) -> UserLookupInfo {
        UserLookupInfo(emailAddress: maybe(&rng, string), phoneNumber: maybe(&rng, string), userRecordName: maybe(&rng, string))
    }

    static func userNameComponents(_ rng: inout RNG) -> UserNameComponents {
        var components = UserNameComponents(givenName: maybe(&rng, string), familyName: maybe(&rng, string))
        components.namePrefix = maybe(&rng, string)
        components.middleName = maybe(&rng, string)
        components.nameSuffix = maybe(&rng, string)
        components.nickname = maybe(&rng, string)
        return components
    }

    static func userIdentityInfo(_ rng: inout RNG) -> UserIdentityInfo {
        UserIdentityInfo(userRecordName: string(&rng), lookupInfo: maybe(&rng, userLookupInfo), nameComponents: maybe(&rng, userNameComponents))
    }

    static func userIdentitiesResponse(_ rng: inout RNG) -> UserIdentitiesResponse {
        UserIdentitiesResponse(users: array(&rng, 0...3, userIdentityInfo))
    }

    static func callerIdentityResponse(_ rng: inout RNG) -> CallerIdentityResponse {
        let identity = userIdentityInfo(&rng)
        var response = CallerIdentityResponse(identity: identity, user: userIdentity(&rng))
        response.users = array(&rng, 0...2, userIdentityInfo)
        return response
    }

    static func discoverUsersRequest(_ rng: inout RNG) -> DiscoverUsersRequest {
        DiscoverUsersRequest(lookupInfos: array(&rng, 0...3, userLookupInfo))
    }

    static func lookupUsersRequest(_ rng: inout RNG) -> LookupUsersRequest { LookupUsersRequest(users: array(&rng, 0...3, userLookupInfo)) }

    static func usersResponse(_ rng: inout RNG) -> UsersResponse { UsersResponse(users: array(&rng, 0...3, userIdentity)) }

    static func userDiscoverabilityRequest(_ rng: inout RNG) -> UserDiscoverabilityRequest {
        UserDiscoverabilityRequest(discoverable: bool(&rng))
    }

    // MARK: - Backlinks, notifications and assets

    static func backlinksRequest(_ rng: inout RNG) -> BacklinksRequest {
        BacklinksRequest(recordName: string(&rng), zoneID: maybe(&rng, zoneID), resultsLimit: maybe(&rng, int),
                         continuationMarker: maybe(&rng, string), desiredKeys: maybe(&rng, keys))
    }

    static func backlink(_ rng: inout RNG) -> Backlink {
        Backlink(recordName: string(&rng), fieldName: fieldName(&rng), action: pick(&rng, Reference.Action.allCases))
    }

    static func backlinksResponse(_ rng: inout RNG) -> BacklinksResponse {
        BacklinksResponse(records: array(&rng, 0...3, record), backlinks: array(&rng, 0...3, backlink), continuationMarker: maybe(&rng, string))
    }

    static func zoneNotification(_ rng: inout RNG) -> ZoneNotification { ZoneNotification(zones: array(&rng, 0...3, zoneID)) }

    static func assetUploadRequest(_ rng: inout RNG) -> AssetUploadRequest {
        let zone = maybe(&rng, zoneID)
        return AssetUploadRequest(zoneID: zone, tokens: array(&rng, 0...3) {
            AssetUploadRequest.Token(recordType: string(&$0), fieldName: fieldName(&$0), recordName: maybe(&$0, string))
        })
    }

    static func assetUploadResponse(_ rng: inout RNG) -> AssetUploadResponse {
        AssetUploadResponse(tokens: array(&rng, 0...3) {
            AssetUploadResponse.Token(recordName: string(&$0), fieldName: fieldName(&$0), url: string(&$0))
        })
    }

    static func assetUploadReceipt(_ rng: inout RNG) -> AssetUploadReceipt {
        AssetUploadReceipt(singleFile: AssetUploadReceipt.SingleFile(
            fileChecksum: string(&rng), size: int64(&rng), receipt: string(&rng),
            wrappingKey: maybe(&rng, string), referenceChecksum: maybe(&rng, string)))
    }

    static func assetRereferenceRequest(_ rng: inout RNG) -> AssetRereferenceRequest {
        let zone = maybe(&rng, zoneID)
        return AssetRereferenceRequest(zoneID: zone, assets: array(&rng, 0...3) {
            AssetRereferenceRequest.Entry(recordName: string(&$0), fieldName: fieldName(&$0))
        })
    }

    /// Assets or errors, each JSON kept as it is (see ``json(_:depth:)``).
    static func assetRereferenceResponse(_ rng: inout RNG) -> AssetRereferenceResponse {
        AssetRereferenceResponse(assets: array(&rng, 0...3) { json(&$0) })
    }

    /// An asset as it travels: uploaded (its stored value) or waiting to be (its local file).
    /// One with both, a downloaded copy, travels as its stored value alone, so none is made.
    static func asset(_ rng: inout RNG) -> Asset {
        if bool(&rng) { return Asset(assetValue(&rng)) }
        let file = pick(&rng, ["a.jpg", "upload-1.bin", "x"])
        return Asset(fileURL: URL(string: "file:///tmp/\(file)")!)
    }
}
