import Foundation
import RecordModel
import Synchronization

/// Where records live: every endpoint of CloudKit Web Services as a method, with CloudKit's rules
/// (validation and the inferred schema, change tags and conflicts, public-database ownership,
/// targets first, `VALIDATE` and `DELETE_SELF`, the change feeds and their tokens, continuation
/// markers, `include`, limits), over a ``StorageEngine`` that only stores rows.
///
/// Every method either answers or throws ``RecordSyncError`` having changed nothing; per-record
/// and per-zone failures are results, not throws. After a write that changed zones commits, the
/// store tells ``notifier`` which.
public final class RecordStore: Sendable {
    /// Where the rows are kept.
    public let engine: any StorageEngine
    /// The limits every request is held to.
    public let limits: StoreLimits
    /// Told of every committed change, for the push channel.
    public let notifier: ChangeNotifier
    /// Signs and checks asset URLs with the keys the storage keeps.
    public let assetSigner: AssetSigner
    /// Whether a step of a search index build runs in this process (`SearchTypes`): one at
    /// a time, so that a write waits for at most one.
    let searchBuildStepping = Mutex(false)
    /// The grants and roles reads are judged by (``Access``), kept for a second.
    let accessInputs = AccessInputs()
    /// How many share lookups each caller made this minute.
    let shareLookups = ShareLookupThrottle()

    /// A store over `engine`.
    public init(engine: any StorageEngine, limits: StoreLimits = StoreLimits()) {
        self.engine = engine
        self.limits = limits
        self.notifier = ChangeNotifier(relay: engine.changeRelay)
        self.assetSigner = AssetSigner(engine: engine)
    }

    /// Milliseconds since 1970, now.
    static func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}
