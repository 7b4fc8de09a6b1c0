import Foundation
import RecordSQL
import RecordStorage

/// An engine's transaction whose storage primitives are written once, over a ``SQLSession``:
/// an engine is its session and dialect, and implements itself only the primitives it
/// overrides (each listed in `docs/architecture.md` with the figure that justifies it and
/// tested against the generic path). The primitives are in `SQLStorageTransaction+*.swift`,
/// one file per part of the storage protocol, over the tables of ``StorageSchema``.
public protocol SQLStorageTransaction: StorageTransaction, SQLSession {
    /// Remembers what the transaction read of a zone (an engine where writers run at once
    /// checks it when it locks the zone: ``checkLockedZone(_:uid:deleted:)``). Default: nothing.
    func noteZoneRead(_ zone: Int64, uid: UUID, deleted: Bool)
    /// Throws ``StaleWrite`` if the zone just locked is not what the transaction read of it
    /// before (another writer deleted or replaced it in between). Default: nothing (an engine
    /// that serialises its writes).
    func checkLockedZone(_ zone: Int64, uid: UUID, deleted: Bool) throws
    /// Orders marking a record type searchable after the writes in flight, on an engine where
    /// several writers run at once: a writing transaction holds it shared from reading the
    /// searchable types to its end, marking takes it alone. Default: nothing (an engine that
    /// serialises its writes).
    func lockSearchTypes(inContainer container: Int64, exclusive: Bool) throws
    /// Makes sure the connection has the temporary table before a delete uses it. Default:
    /// creates it if missing (SQLite: one created inside a transaction goes if that rolls
    /// back, so each use asks).
    func prepareTemporaryTable(_ table: TemporaryTable) throws
    /// The keys of reference field names in `ref_fields` this transaction has read or added
    /// (``fieldKey(_:)``); the engine's savepoint, undone, forgets those it added.
    var fieldKeys: [String: Int64] { get set }
}

extension SQLStorageTransaction {
    public func noteZoneRead(_ zone: Int64, uid: UUID, deleted: Bool) {}
    public func checkLockedZone(_ zone: Int64, uid: UUID, deleted: Bool) throws {}
    public func lockSearchTypes(inContainer container: Int64, exclusive: Bool) throws {}
    public func lockSchema(inContainer container: Int64, exclusive: Bool) throws {}
    public func prepareTemporaryTable(_ table: TemporaryTable) throws {
        try run("\(raw: table.createStatement(in: dialect))")
    }
}

extension SQLDialect {
    /// The name of the connection's temporary table `name`.
    public func temporary(_ name: String) -> String {
        self == .sqlite ? "temp.\(name)" : name
    }

    /// What locks the rows a `SELECT` reads until the transaction ends: PostgreSQL's
    /// `FOR UPDATE`; nothing on SQLite, whose writes are serialised.
    public var rowLock: String {
        self == .sqlite ? "" : " FOR UPDATE"
    }

    /// PostgreSQL's `FOR UPDATE SKIP LOCKED`: the rows a `SELECT` reads are locked to the
    /// transaction's end, and rows another transaction holds are left out.
    public var rowLockSkippingLocked: String {
        self == .sqlite ? "" : " FOR UPDATE SKIP LOCKED"
    }

    /// PostgreSQL's `FOR SHARE OF table`: the rows read from `table` cannot be changed or
    /// deleted by another transaction until this one ends.
    public func rowShareLock(of table: String) -> String {
        self == .sqlite ? "" : " FOR SHARE OF \(table)"
    }

    /// The join that keeps its left table the outer loop where the planner would not: SQLite's
    /// `CROSS JOIN` (each row of the left one search of the right's key, rather than a walk of
    /// the right probing the left); PostgreSQL's plain `JOIN`, whose planner weighs both with
    /// statistics.
    public var orderedJoin: String {
        self == .sqlite ? "CROSS JOIN" : "JOIN"
    }
}

/// A write that a concurrent commit made stale (what it read changed before it could lock it):
/// an engine where several writers run at once runs the write again from the start; one that
/// serialises its writes never meets it.
public struct StaleWrite: Error, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}
