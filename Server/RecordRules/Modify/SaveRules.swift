import RecordModel

/// What a save or a delete may do to the record stored under its name: plain functions of the
/// operation, the stored record and the caller's ``Access``, no storage.
enum SaveRules {
    /// Checks a save against the stored record (`nil`: none), with the caller's ``Access``.
    ///
    /// - Throws: `NOT_FOUND` for an `update` or `replace` of a missing record; `ACCESS_DENIED`
    ///   when the caller may not create (a record of the type) or write (the stored record);
    ///   `EXISTS` for a create of a stored record; `CONFLICT` for a stale change tag (both carry
    ///   the stored record when the caller may read it); `BAD_REQUEST` for a record of another
    ///   type.
    static func checkSave(_ type: OperationType, name: String, recordType: String, changeTag: String?, against current: Record?, access: Access) throws {
        guard let current else {
            if type == .update || type == .replace {
                throw RecordSyncError(.notFound, "record \(NameRules.quoted(name)) does not exist", recordName: name)
            }
            try access.require(.create, recordType, createdBy: nil, recordName: name)
            return
        }
        if type == .create {
            throw RecordSyncError(.exists, "record \(NameRules.quoted(name)) already exists", recordName: name, serverRecord: access.mayRead(current) ? current : nil)
        }
        try access.require(.write, current.recordType, createdBy: current.created?.userRecordName, recordName: name)
        if type.checksChangeTag, changeTag != current.recordChangeTag {
            throw stale(name, changeTag, current)
        }
        if current.recordType != recordType {
            throw RecordSyncError(.badRequest, "record \(NameRules.quoted(name)) is a \(current.recordType), not a \(recordType)", recordName: name)
        }
    }

    /// Checks a delete against the stored record.
    ///
    /// - Throws: `NOT_FOUND`, `ACCESS_DENIED` (a record the caller may not write) or `CONFLICT`
    ///   (for `delete` with a stale tag).
    static func checkDelete(_ type: OperationType, name: String, changeTag: String?, against current: Record?, access: Access) throws -> Record {
        guard let current else {
            throw RecordSyncError(.notFound, "record \(NameRules.quoted(name)) does not exist", recordName: name)
        }
        try access.require(.write, current.recordType, createdBy: current.created?.userRecordName, recordName: name)
        if let part = access.participation?.part(rootedAt: name) {
            throw RecordSyncError(.accessDenied, "only the owner deletes the root of share \(NameRules.quoted(part.share)) (record \(NameRules.quoted(name)))", recordName: name)
        }
        if type == .delete, changeTag != current.recordChangeTag {
            throw stale(name, changeTag, current)
        }
        return current
    }

    /// The fields a save stores: an update (`update`, `forceUpdate`) of a stored record keeps
    /// the stored fields it does not name and removes those it sets to `null`; otherwise the
    /// fields given. `merged` tells whether they differ from the given ones.
    static func fields(of type: OperationType, given: [String: FieldValue], removals: @autoclosure () -> Set<String>, current: Record?) -> (fields: [String: FieldValue], merged: Bool) {
        guard let current, type == .update || type == .forceUpdate else { return (given, false) }
        let removed = removals()
        return (current.fields.filter { !removed.contains($0.key) }.merging(given) { $1 }, true)
    }

    private static func stale(_ name: String, _ changeTag: String?, _ current: Record) -> RecordSyncError {
        RecordSyncError(.conflict, "record \(NameRules.quoted(name)) has changed on the server: recordChangeTag \(changeTag ?? "") is stale, the server's is \(current.recordChangeTag ?? "")", recordName: name, serverRecord: current)
    }
}
