import Foundation
import GRDB
import GRDBSQLite

/// Runs a WAL database's checkpoints on a connection and a thread of their own, off the
/// writer's commit path.
///
/// SQLite's automatic checkpoint runs inside the commit that takes the write-ahead log past
/// 1,000 pages, on the writing connection: that commit copies the log into the database file
/// and syncs it while every other write waits for it. With a checkpointer installed, the
/// writing connection's WAL hook only looks at the log's size after each commit; once
/// ``threshold`` pages were written since the last background checkpoint (or since the log
/// started over) it asks for a `PASSIVE` checkpoint, which runs on this object's own
/// connection, on a background queue, while writes go on. (A passive checkpoint copies what
/// no reader still needs and never blocks readers or the writer; the writer starts the log
/// over once a checkpoint has copied all of it.) A checkpoint copies the newest version of each
/// page in the log once, so a page that several commits rewrite (a leaf of an index whose keys
/// arrive in no order, say) is copied once per checkpoint: asking after every commit would copy
/// it every time.
///
/// The writer starts the log over only when a checkpoint has copied all of it by the time the
/// next write begins, which a checkpoint running beside continuous writes rarely manages: under
/// a steady stream of writes the log grows until a commit finds it at ``limit`` pages and
/// checkpoints itself, as SQLite's own hook would (copying only what the background
/// checkpoints have not yet copied); then the log starts over. So the log stays bounded, at
/// about ``limit`` pages on disk (64 MB with 4 KiB pages) under sustained writes.
///
/// The checkpointer's connection may be the last one to the file: it closes when the
/// checkpointer goes (a moment after the database, if a checkpoint is running), and as every
/// last connection does, it checkpoints the log and removes it, holding the file meanwhile. A
/// connection opened just then must wait for it (RecordSync's wait up to 30 s when busy).
///
/// Durability is unchanged: commits still sync the log (`synchronous = FULL`), and a
/// checkpoint syncs the log before copying it and the database file after.
///
/// Install it from `Configuration.prepareDatabase` with ``install(in:)``; keep the checkpointer
/// as long as the database is open. (Each installed connection keeps a few bytes of context
/// for its hook for as long as the process runs: SQLite's WAL hook takes no destructor. The
/// context holds the checkpointer weakly, though GRDB's configuration, which the
/// `prepareDatabase` closure lives in, usually keeps it alive as long as the connections.)
public final class WALCheckpointer: @unchecked Sendable {
    /// The database file.
    public let path: String
    /// Log pages written since the last background checkpoint from which a commit asks for
    /// another (SQLite's automatic checkpoint runs once the log is 1,000 pages long).
    public let threshold: Int32
    /// Log size, in pages, at which a commit checkpoints on its own connection.
    public let limit: Int32

    private let queue = DispatchQueue(label: "RecordSQL.WALCheckpointer")
    /// Guards `schedule` and the counts.
    private let lock = NSLock()
    /// When to ask for the next background checkpoint.
    private var schedule: CheckpointSchedule
    /// Checkpoints run in the background, and by committing connections (read by tests).
    var checkpointCounts: (background: Int, inline: Int) { lock.withLock { (background, inline) } }
    private var background = 0
    private var inline = 0
    /// The checkpointer's own connection, used only on `queue` (and closed by `deinit`).
    private var connection: OpaquePointer?

    /// - Parameters:
    ///   - path: the database file the connections it is installed in have open.
    ///   - threshold: log pages written since the last background checkpoint after which
    ///     another is asked for.
    ///   - limit: log pages at which the committing connection checkpoints inline.
    public init(path: String, threshold: Int32 = 1000, limit: Int32 = 16000) {
        self.path = path
        self.threshold = threshold
        self.limit = max(limit, threshold)
        schedule = CheckpointSchedule(threshold: threshold, limit: max(limit, threshold))
    }

    deinit {
        if let connection { sqlite3_close_v2(connection) }
    }

    /// Replaces `db`'s automatic checkpoints with this checkpointer's. Read-only connections
    /// (a pool's readers) never commit and are left alone.
    public func install(in db: Database) {
        guard !db.configuration.readonly else { return }
        let context = Unmanaged.passRetained(HookContext(self)).toOpaque()
        // Replaces the hook sqlite3_wal_autocheckpoint installed.
        sqlite3_wal_hook(db.sqliteConnection, walHook, context)
    }

    /// After a commit of `connection`, whose log is now `pages` pages long.
    fileprivate func committed(_ connection: OpaquePointer?, pages: Int32) {
        let ask = lock.withLock { schedule.committed(pages: pages) }
        if pages >= limit {
            sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            lock.withLock { inline += 1 }
        } else if ask {
            queue.async { self.checkpoint() }
        }
    }

    /// Runs one passive checkpoint on the checkpointer's connection (opened on first use).
    private func checkpoint() {
        var logPages: Int32 = -1
        defer {
            lock.withLock {
                schedule.checkpointed(logPages: logPages >= 0 ? logPages : nil)
                if logPages >= 0 { background += 1 }
            }
        }
        if connection == nil {
            var opened: OpaquePointer?
            // Kept only once it has read the database (which opens its view of the log): a
            // connection that never did would report its checkpoints done without doing any.
            guard sqlite3_open_v2(path, &opened, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK,
                  sqlite3_busy_timeout(opened, 5000) == SQLITE_OK,
                  sqlite3_exec(opened, "PRAGMA synchronous = FULL", nil, nil, nil) == SQLITE_OK,
                  sqlite3_exec(opened, "SELECT 1 FROM sqlite_master LIMIT 1", nil, nil, nil) == SQLITE_OK else {
                sqlite3_close_v2(opened)
                return
            }
            connection = opened
        }
        // A failure (SQLITE_BUSY while another checkpoint runs, say) leaves the log for the
        // next one; the limit keeps it bounded. A log size of -1 means the file is not in WAL
        // mode: nothing was checkpointed.
        if sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &logPages, nil) != SQLITE_OK { logPages = -1 }
    }
}

/// When a ``WALCheckpointer`` asks for a background checkpoint: once `threshold` log pages
/// were written since the last one, and only one at a time.
struct CheckpointSchedule {
    let threshold: Int32
    /// From this log size the committing connection checkpoints itself instead.
    let limit: Int32
    /// Whether a checkpoint is queued or running.
    private(set) var scheduled = false
    /// The log pages the last background checkpoint found (it copied what no reader needed of
    /// them); 0 once the log has started over.
    private var copiedThrough: Int32 = 0
    /// The log's length after the last commit.
    private var lastCommitPages: Int32 = 0

    init(threshold: Int32, limit: Int32) {
        self.threshold = threshold
        self.limit = limit
    }

    /// After a commit that left the log `pages` long: whether to ask for a checkpoint now.
    mutating func committed(pages: Int32) -> Bool {
        // The log only grows until it starts over: a log shorter than at the last commit, or
        // than the last checkpoint found it, has started over, and what was copied of the old
        // one says nothing of the new. (The second catches a restart and commit that came
        // between a checkpoint's reading of the log and its report.)
        if pages < lastCommitPages || pages < copiedThrough { copiedThrough = 0 }
        lastCommitPages = pages
        guard pages < limit, pages >= threshold, !scheduled, pages - copiedThrough >= threshold else { return false }
        scheduled = true
        return true
    }

    /// After the checkpoint asked for ran: `logPages` is the log size it found, or `nil` if it
    /// failed (nothing known to be copied).
    mutating func checkpointed(logPages: Int32?) {
        scheduled = false
        if let logPages { copiedThrough = logPages }
    }
}

/// What a connection's WAL hook is given: the checkpointer, weakly (the connection may
/// outlive it; then commits checkpoint as SQLite's own hook would).
private final class HookContext: @unchecked Sendable {
    weak var checkpointer: WALCheckpointer?
    init(_ checkpointer: WALCheckpointer) { self.checkpointer = checkpointer }
}

private let walHook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = { context, connection, _, pages in
    guard let context else { return SQLITE_OK }
    if let checkpointer = Unmanaged<HookContext>.fromOpaque(context).takeUnretainedValue().checkpointer {
        checkpointer.committed(connection, pages: pages)
    } else if pages >= 1000 {
        sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }
    return SQLITE_OK
}
