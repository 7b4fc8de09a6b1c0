import Foundation
import PostgresNIO
import RecordModel
import RecordSQL
import RecordStorage
import RecordStorageSQL

/// The temporary tables of a cascading delete (``TemporaryTable``), created once per connection.
extension PostgresTransaction {
    /// Creates the connection's temporary tables the first time it runs a write, before the
    /// write's transaction begins (so that no rollback undoes them). They last as long as the
    /// connection; their rows go at each commit.
    func prepareTemporaryTables() throws {
        let id = connection.id
        guard !engine.preparedConnections.withLockedValue({ $0.contains(id) }) else { return }
        for table in TemporaryTable.allCases {
            try execute("\(unescaped: table.createStatement(in: .postgres))")
        }
        engine.preparedConnections.withLockedValue { _ = $0.insert(id) }
    }

    /// Nothing: ``prepareTemporaryTables()`` made them before the transaction began.
    func prepareTemporaryTable(_ table: TemporaryTable) throws {}
}
