import RecordModel
@testable import RecordRules
import Testing

/// Planning a `records/modify` batch, without a database: the saving order, what a stored record
/// lets a save or delete do, and the answers of atomic and non-atomic batches.
@Suite struct BatchPlanningTests {
    static let alice = User(id: 1, name: "alice", userRecordName: "_alice")
    static let bob = User(id: 2, name: "bob", userRecordName: "_bob")
    static let zoneID = ZoneID(zoneName: "Gallery", ownerRecordName: "_alice")

    static func scope(_ user: User = alice, _ kind: DatabaseKind = .private) -> DatabaseScope {
        DatabaseScope(container: "iCloud.test", environment: "development", kind: kind, user: user)
    }

    /// What `user` may do in a database of `kind` (the public one's with CloudKit's default grants).
    static func access(_ user: User = alice, _ kind: DatabaseKind = .private) -> Access {
        kind == .private ? .owner(user) : Access(user: user, roles: [], grants: [:])
    }

    /// A validated save of `name` whose reference fields point at `targets`.
    static func save(_ name: String, referencing targets: [String] = []) -> ModifyBatch.Operation {
        var operation = ModifyBatch.Operation(type: .forceReplace, name: name, recordType: "Artwork")
        var fields: [String: FieldValue] = ["title": .string(name)]
        for (index, target) in targets.enumerated() {
            fields["ref\(index)"] = .reference(Reference(recordName: target, action: .validate))
        }
        operation.fields = fields
        return operation
    }

    static func stored(_ name: String, type: String = "Artwork", tag: String = "7", creator: String = "_alice",
                       fields: [String: FieldValue] = [:]) -> Record {
        Record(recordName: name, recordType: type, zoneID: zoneID, recordChangeTag: tag, fields: fields,
               created: Stamp(timestamp: 1, userRecordName: creator), modified: Stamp(timestamp: 1, userRecordName: creator))
    }

    // MARK: Saving order

    @Test func targetsAreSavedBeforeTheirSourcesWhateverTheRequestOrder() {
        // artwork → artist → label, listed sources first; a delete and a failed operation between.
        let operations: [ModifyBatch.Operation?] = [
            Self.save("artwork", referencing: ["artist"]),
            ModifyBatch.Operation(type: .forceDelete, name: "old", recordType: ""),
            Self.save("artist", referencing: ["label"]),
            nil,
            Self.save("label"),
        ]
        #expect(ModifyBatch.savingGroups(of: operations) == [[4], [2], [0]])
    }

    @Test func aReferenceCycleIsSavedAsOneGroupAfterItsTargets() {
        let operations: [ModifyBatch.Operation?] = [Self.save("a", referencing: ["b"]), Self.save("b", referencing: ["a", "c"]), Self.save("c")]
        #expect(ModifyBatch.savingGroups(of: operations) == [[2], [0, 1]])
    }

    @Test func recordsThatReferenceNothingInTheBatchKeepRequestOrder() {
        let operations: [ModifyBatch.Operation?] = [Self.save("x", referencing: ["elsewhere"]), Self.save("y"), Self.save("z", referencing: ["z"])]
        #expect(ModifyBatch.savingGroups(of: operations) == [[0], [1], [2]])
    }

    // MARK: Conflicts and ownership

    @Test func aStaleChangeTagIsAConflictCarryingTheServerRecord() throws {
        let current = Self.stored("lilies", tag: "7")
        let error = try #require(throws: RecordSyncError.self) {
            try SaveRules.checkSave(.update, name: "lilies", recordType: "Artwork", changeTag: "6", against: current, access: Self.access())
        }
        #expect(error.code == .conflict && error.serverRecord?.recordChangeTag == "7")
        let deleteError = try #require(throws: RecordSyncError.self) {
            try SaveRules.checkDelete(.delete, name: "lilies", changeTag: "6", against: current, access: Self.access())
        }
        #expect(deleteError.code == .conflict && deleteError.serverRecord?.recordName == "lilies")
        // The current tag passes, and the force forms never look at it.
        try SaveRules.checkSave(.update, name: "lilies", recordType: "Artwork", changeTag: "7", against: current, access: Self.access())
        try SaveRules.checkSave(.forceUpdate, name: "lilies", recordType: "Artwork", changeTag: "1", against: current, access: Self.access())
        try SaveRules.checkSave(.forceReplace, name: "lilies", recordType: "Artwork", changeTag: nil, against: current, access: Self.access())
        #expect(try SaveRules.checkDelete(.forceDelete, name: "lilies", changeTag: nil, against: current, access: Self.access()).recordName == "lilies")
    }

    @Test func whatAStoredRecordLetsASaveDo() throws {
        let current = Self.stored("lilies")
        let exists = try #require(throws: RecordSyncError.self) {
            try SaveRules.checkSave(.create, name: "lilies", recordType: "Artwork", changeTag: nil, against: current, access: Self.access())
        }
        #expect(exists.code == .exists && exists.serverRecord != nil)
        let otherType = try #require(throws: RecordSyncError.self) {
            try SaveRules.checkSave(.forceReplace, name: "lilies", recordType: "Artist", changeTag: nil, against: current, access: Self.access())
        }
        #expect(otherType.code == .badRequest && otherType.reason.contains("is a Artwork, not a Artist"))
        for type in [OperationType.update, .replace] {
            let missing = try #require(throws: RecordSyncError.self) {
                try SaveRules.checkSave(type, name: "gone", recordType: "Artwork", changeTag: "1", against: nil, access: Self.access())
            }
            #expect(missing.code == .notFound)
        }
        for type in [OperationType.create, .forceUpdate, .forceReplace] {
            try SaveRules.checkSave(type, name: "new", recordType: "Artwork", changeTag: nil, against: nil, access: Self.access())
        }
        #expect(throws: RecordSyncError.self) { try SaveRules.checkDelete(.forceDelete, name: "gone", changeTag: nil, against: nil, access: Self.access()) }
    }

    @Test func inThePublicDatabaseOnlyTheCreatorChangesARecord() throws {
        let bobs = Self.stored("notice", creator: "_bob")
        let save = try #require(throws: RecordSyncError.self) {
            try SaveRules.checkSave(.forceReplace, name: "notice", recordType: "Artwork", changeTag: nil, against: bobs, access: Self.access(Self.alice, .public))
        }
        #expect(save.code == .accessDenied)
        let delete = try #require(throws: RecordSyncError.self) {
            try SaveRules.checkDelete(.forceDelete, name: "notice", changeTag: nil, against: bobs, access: Self.access(Self.alice, .public))
        }
        #expect(delete.code == .accessDenied)
        try SaveRules.checkSave(.forceReplace, name: "notice", recordType: "Artwork", changeTag: nil, against: bobs, access: Self.access(Self.bob, .public))
    }

    @Test func anUpdateKeepsTheFieldsItDoesNotNameAndAReplaceDoesNot() {
        let current = Self.stored("lilies", fields: ["title": .string("Lilies"), "year": .int64(1906), "note": .string("x")])
        let update = SaveRules.fields(of: .update, given: ["year": .int64(1907)], removals: ["note"], current: current)
        #expect(update.merged && update.fields == ["title": .string("Lilies"), "year": .int64(1907)])
        let replace = SaveRules.fields(of: .replace, given: ["year": .int64(1907)], removals: [], current: current)
        #expect(!replace.merged && replace.fields == ["year": .int64(1907)])
        let created = SaveRules.fields(of: .forceUpdate, given: ["year": .int64(1907)], removals: [], current: nil)
        #expect(!created.merged && created.fields == ["year": .int64(1907)])
    }

    // MARK: Answers

    @Test func aFailedCycleFailsEveryMemberNamingTheCulprit() {
        var results = BatchResults(count: 3, zoneID: Self.zoneID)
        let names = ["a", "b", "c"]
        results.failGroup([0, 2], RecordSyncError(.conflict, "stale", recordName: "c"), names: { names[$0] })
        #expect(results.results[2]?.error?.code == .conflict)
        #expect(results.results[0]?.error?.code == .atomicError && results.results[0]?.error?.reason.contains("'c'") == true)
        #expect(results.results[1] == nil)
        #expect(results.failedNames == ["a", "c"])
        // A VALIDATE failure of one member is the others' cause too.
        var validating = BatchResults(count: 2, zoneID: Self.zoneID)
        validating.failGroup([0, 1], RecordSyncError(.validatingReferenceError, "missing", recordName: "a"), names: { names[$0] })
        #expect(validating.results.map { $0?.error?.code } == [.validatingReferenceError, .validatingReferenceError])
        #expect(validating.results.allSatisfy { $0?.error?.zoneID == Self.zoneID })
    }

    @Test func anAtomicFailureAnswersEveryOperationWithAnError() {
        var results = BatchResults(count: 3, zoneID: Self.zoneID)
        results.succeed(0, .success(Self.stored("a")))
        results.fail(1, RecordSyncError(.notFound, "no b"), name: "b")
        let answer = results.atomicFailure(names: { ["a", "b", "c"][$0] }).records
        #expect(answer.map { $0.error?.code } == [.atomicError, .notFound, .atomicError])
        #expect(answer[0].error?.reason.contains("'b': NOT_FOUND") == true && answer[2].error?.recordName == "c")
        // Non-atomic: each keeps its own result; one never decided is an internal error.
        let mixed = results.response().records
        #expect(mixed[0].record?.recordName == "a" && mixed[1].error?.code == .notFound && mixed[2].error?.code == .internalError)
        // A group whose work was undone is forgotten before it fails.
        results.forget([0])
        #expect(results.results[0] == nil)
    }

    // MARK: Numbers and tags

    @Test func changesAreNumberedInOrderAndTaggedByTheirNumber() {
        var feed = ZoneFeedWriter(zone: 1, database: 1, start: 34)
        #expect(!feed.moved)
        #expect(feed.next() == 35 && ZoneFeedWriter.changeTag(35) == "z")
        #expect(feed.take(3) == 36 && feed.last == 38 && feed.next() == 39)
        #expect(feed.moved && ZoneFeedWriter.changeTag(36) == "10")
    }
}
