import RecordModel

/// Limits the store enforces on every request.
public struct StoreLimits: Sendable {
    /// Operations per `records/modify` (and records per `records/lookup`, zones per
    /// `zones/modify`/`zones/lookup`); more is `LIMIT_EXCEEDED`.
    public var maximumOperationsPerRequest: Int = 400
    /// Records per response when the request gives no `resultsLimit` (a page of a zone's changes
    /// takes ``maximumChangeResultsLimit`` instead).
    public var defaultResultsLimit: Int = 200
    /// The largest `resultsLimit` honoured; larger values are capped to it.
    public var maximumResultsLimit: Int = 400
    /// The most records one page of a zone's changes (`records/changes`, a zone of `changes/zone`,
    /// either form) holds: its `resultsLimit` is capped to it, and it is the default. CloudKit's
    /// own default is "the maximum number of records allowed", and a client reading a zone from
    /// scratch makes fewer round trips.
    public var maximumChangeResultsLimit: Int = 1000
    /// The most field text (bytes of its JSON form) one page of a zone's changes carries: a page
    /// reaching it ends there (with `moreComing`), after at least one record.
    public var maximumChangePageBytes: Int = 4 << 20
    /// The most field data one record may hold, in bytes of its JSON form.
    public var maximumRecordBytes: Int = 1024 * 1024
    /// How deep `records/lookup` `include` may follow references.
    public var maximumIncludeDepth: Int = 8
    /// The largest asset accepted, in bytes (Apple's documented 50 MB).
    public var maximumAssetBytes: Int64 = 50 * 1024 * 1024
    /// How long an upload URL from `assets/upload` is valid (Apple: 15 minutes).
    public var assetUploadLifetime: Duration = .seconds(15 * 60)
    /// How long a `downloadURL` is valid.
    public var assetDownloadLifetime: Duration = .seconds(60 * 60)
    /// How long an asset no record holds (and an upload never bound) is kept before it is
    /// removed; also how long a receipt can be bound.
    public var assetGracePeriod: Duration = .seconds(24 * 60 * 60)
    /// The most records one `records/query` request examines when Swift finishes its filters
    /// (string matching, ``FilterPlan``); past it, the page ends early with a continuation marker.
    public var maximumRecordsExamined: Int = 20_000
    /// The steps of string matching (`LIKE`, `MATCHES`, `CONTAINS`) one request may take;
    /// more is `LIMIT_EXCEEDED`.
    public var maximumMatchSteps: Int = MatchBudget.defaultSteps

    /// How many records one write transaction of a search index build indexes
    /// (`SearchTypes`): writes to the container wait for at most one such transaction.
    public var searchIndexBatch: Int = 5_000
    /// How many records a word block takes (`SearchTypes`): a word search reads a range of
    /// each block of the zone, and a step writes within the zone's last block.
    public var searchBlockRecords: Int = 20_000
    /// How long a word search runs the builds of the types it needs (`SearchTypes`) before it
    /// answers `TRY_AGAIN_LATER`: a type of tens of thousands of records is built within it.
    public var searchIndexWait: Duration = .seconds(2)

    /// How far a signed request's `X-Apple-CloudKit-Request-ISO8601Date` may be from the
    /// server's clock, either way; also how long its signature is remembered, so that it is
    /// never accepted twice.
    public var signedRequestSkew: Duration = .seconds(5 * 60)

    /// The most records and bytes one user's records may hold; none by default.
    public var quota = Quota()

    /// The URL a share's `url` begins with, its short GUID after it (`recordserver
    /// --share-url`); without one, shares carry no `url`.
    public var shareURLBase: String?
    /// How many `records/resolve` and `records/accept` short GUIDs one caller may send a
    /// minute; more is `THROTTLED` (a short GUID is a secret, not to be guessed).
    public var shareLookupsPerMinute: Int = 120

    /// Creates limits with the defaults.
    public init() {}

    /// `requested` capped to ``maximumResultsLimit``, or the default; `BAD_REQUEST` if not
    /// positive.
    package func resultsLimit(_ requested: Int?) throws -> Int {
        guard let requested else { return defaultResultsLimit }
        return min(try Self.positive(requested), maximumResultsLimit)
    }

    /// A change page's `resultsLimit`: `requested` capped to ``maximumChangeResultsLimit``, which
    /// is also the default; `BAD_REQUEST` if not positive.
    package func changeResultsLimit(_ requested: Int?) throws -> Int {
        min(try requested.map(Self.positive) ?? maximumChangeResultsLimit, maximumChangeResultsLimit)
    }

    private static func positive(_ requested: Int) throws -> Int {
        guard requested > 0 else {
            throw RecordSyncError(.badRequest, "resultsLimit must be a positive integer, not \(requested)")
        }
        return requested
    }

    /// `LIMIT_EXCEEDED` when a request carries more than ``maximumOperationsPerRequest`` items.
    package func checkCount(_ count: Int, of what: String) throws {
        if count > maximumOperationsPerRequest {
            throw RecordSyncError(.limitExceeded, "the request has \(count) \(what); the limit is \(maximumOperationsPerRequest) per request")
        }
    }
}
