import GRDB

extension DatabasePool {
    /// Opens a pool whose commits sync the write-ahead log before they return
    /// (`synchronous = FULL`), so that an acknowledged commit survives a crash of the machine,
    /// not only of the process.
    ///
    /// `PRAGMA synchronous = FULL` in `Configuration.prepareDatabase` is not enough on its own:
    /// GRDB's `DatabasePool` turns WAL on in its writer after `prepareDatabase` has run, and sets
    /// that connection to `synchronous = NORMAL` as it does. In WAL mode `NORMAL` never syncs the
    /// log at commit (only at checkpoints), so the last commits before a power cut or an OS crash
    /// are lost though the caller was told they succeeded. This sets the writer back to `FULL`
    /// and checks that it took.
    ///
    /// - Throws: GRDB's `DatabaseError` when the file cannot be opened, or when the writer's
    ///   `synchronous` setting does not read back as `FULL`.
    public static func durable(path: String, configuration: Configuration) throws -> DatabasePool {
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            let level = try Int.fetchOne(db, sql: "PRAGMA synchronous")
            guard level == 2 else {
                throw DatabaseError(message: "could not set synchronous = FULL on the writer of \(path) (it reads \(level.map(String.init) ?? "nothing"))")
            }
        }
        return pool
    }
}
