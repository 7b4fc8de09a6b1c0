import RecordModel

/// The server's tables, each described once (``TableDefinition``), and the functions and
/// triggers each engine keeps beside them: what `data copy` moves, what rows are read by, and
/// what a database built from the shipped migrations must hold (`StorageCatalogueTests`).
///
/// Keys (`Int64`) are the engine's own: a database's, a zone's, a user's. Every table of a
/// zone's contents holds its zone's key in `zone_id`.
public enum StorageSchema {
    // MARK: Users and credentials

    /// Users. A user's key is never given again once the user is deleted: what is keyed by it
    /// elsewhere (push listeners in a running server, a request authenticated a moment before
    /// the delete) must never reach a later user.
    public static let users = TableDefinition("users", [
        ColumnDefinition("id", .int64, generated: .neverReused),
        .name("name"),
        .name("record_name"),
        ColumnDefinition("created_at", .int64),
        // What users let others find them by (users/discover, users/lookup/*).
        ColumnDefinition("email", .text, nullable: true),
        ColumnDefinition("given_name", .text, nullable: true),
        ColumnDefinition("family_name", .text, nullable: true),
        ColumnDefinition("discoverable", .bool, default: .bool(false)),
    ], primaryKey: ["id"], uniques: [["name"], ["record_name"]], indexes: [
        IndexDefinition("users_by_email", ["email"], unique: true, where: "email IS NOT NULL"),
    ])

    /// Bearer tokens, by the SHA-256 of their value; each named (one per device) and perhaps
    /// expiring (milliseconds since 1970).
    public static let tokens = TableDefinition("tokens", [
        ColumnDefinition("hash", .bytes),
        ColumnDefinition("user_id", .int64, references: "users(id)"),
        ColumnDefinition("created_at", .int64),
        .name("name", default: .text("")),
        ColumnDefinition("expires_at", .int64, nullable: true),
    ], primaryKey: ["hash"], indexes: [
        IndexDefinition("tokens_by_user", ["user_id", "name"], unique: true),
    ])

    /// The identities users sign in with (docs/protocol.md, "Signing in"): an identity
    /// provider's issuer and subject (an ID token's `iss` and `sub`), each its user's for good;
    /// `provider` the operator's name for the provider, `email` the address the provider gave
    /// when the identity was first seen and whether it said the address was verified.
    public static let identities = TableDefinition("identities", [
        .name("issuer"),
        .name("subject"),
        ColumnDefinition("user_id", .int64, references: "users(id)"),
        .name("provider"),
        ColumnDefinition("email", .text, nullable: true),
        ColumnDefinition("email_verified", .bool, default: .bool(false)),
        ColumnDefinition("created_at", .int64),
    ], primaryKey: ["issuer", "subject"], indexes: [
        IndexDefinition("identities_by_user", ["user_id"]),
    ])

    /// Built-in accounts (docs/protocol.md, "Accounts"): a user's email address, lower-cased
    /// and verified (a sign-up becomes an account only once its address is verified), and the
    /// password's hash (`scrypt$N$r$p$SALT$KEY`, base64).
    public static let accounts = TableDefinition("accounts", [
        ColumnDefinition("user_id", .int64, references: "users(id)"),
        .name("email"),
        ColumnDefinition("password_hash", .text),
        ColumnDefinition("created_at", .int64),
        ColumnDefinition("password_changed_at", .int64),
    ], primaryKey: ["user_id"], uniques: [["email"]])

    /// Single-use codes, by the SHA-256 of their value, each expiring: `signup` (mailed to the
    /// address a sign-up gave, with the password chosen and the invitation used),
    /// `reset` (mailed to an account's address) and `invitation` (made by the operator,
    /// perhaps for one address).
    public static let accountCodes = TableDefinition("account_codes", [
        ColumnDefinition("hash", .bytes),
        .name("kind"),
        ColumnDefinition("email", .text, nullable: true),
        ColumnDefinition("password_hash", .text, nullable: true),
        ColumnDefinition("invitation", .bytes, nullable: true),
        ColumnDefinition("created_at", .int64),
        ColumnDefinition("expires_at", .int64),
    ], primaryKey: ["hash"], indexes: [
        IndexDefinition("account_codes_by_email", ["email", "kind"]),
        IndexDefinition("account_codes_by_expiry", ["expires_at"]),
    ])

    /// Counted attempts (failed sign-ins, mails sent) per key (`account:EMAIL`,
    /// `address:IP`, `mail:EMAIL`), in the window that began at `window_start`: what every
    /// server throttles by.
    public static let signInAttempts = TableDefinition("sign_in_attempts", [
        .name("key"),
        ColumnDefinition("attempts", .int64),
        ColumnDefinition("window_start", .int64),
    ], primaryKey: ["key"], indexes: [
        IndexDefinition("sign_in_attempts_by_age", ["window_start"]),
    ])

    /// Named operators (docs/deploying.md, "Operators"): credentials that are not a user's,
    /// each secret kept as its SHA-256, with its scopes (space-separated).
    public static let operators = TableDefinition("operators", [
        .name("name"),
        ColumnDefinition("secret_hash", .bytes),
        ColumnDefinition("scopes", .text),
        ColumnDefinition("created_at", .int64),
    ], primaryKey: ["name"], uniques: [["secret_hash"]])

    /// What operators did through the API: who (by name, kept after a revocation), when, what
    /// and on what.
    public static let operatorAudit = TableDefinition("operator_audit", [
        ColumnDefinition("id", .int64, generated: .neverReused),
        .name("operator"),
        ColumnDefinition("at", .int64),
        ColumnDefinition("action", .text),
        ColumnDefinition("target", .text),
    ], primaryKey: ["id"], indexes: [
        IndexDefinition("operator_audit_by_time", ["at"]),
    ])

    /// The web console's sessions (docs/console.md, "Signing in"): each cookie kept as its
    /// SHA-256, the operator it signed in (by name: revoking the operator removes them), when
    /// it began, when it was last used (for the idle limit) and when it ends at the latest.
    public static let consoleSessions = TableDefinition("console_sessions", [
        ColumnDefinition("token_hash", .bytes),
        .name("operator"),
        ColumnDefinition("created_at", .int64),
        ColumnDefinition("seen_at", .int64),
        ColumnDefinition("expires_at", .int64),
    ], primaryKey: ["token_hash"], indexes: [
        IndexDefinition("console_sessions_by_operator", ["operator"]),
        IndexDefinition("console_sessions_by_expiry", ["expires_at"]),
    ])

    /// The request log (docs/console.md, "The request log"): each request every node answered
    /// lately, kept `--request-log-hours` (24) and at most a million rows: when, which node,
    /// its request id, method and path (never its query), the route's pattern, who sent it (the
    /// user, and the operator acting as them), its status and error code, its time in
    /// microseconds.
    public static let requestLog = TableDefinition("request_log", [
        ColumnDefinition("id", .int64, generated: .rowid),
        ColumnDefinition("at", .int64),
        ColumnDefinition("node", .text),
        ColumnDefinition("request_id", .text),
        ColumnDefinition("method", .text),
        ColumnDefinition("path", .text),
        ColumnDefinition("endpoint", .text),
        .name("user_record"),
        .name("user_name"),
        .name("operator"),
        ColumnDefinition("status", .int32),
        .name("error_code"),
        ColumnDefinition("micros", .int64),
    ], primaryKey: ["id"], indexes: [
        IndexDefinition("request_log_by_time", ["at"]),
        IndexDefinition("request_log_by_user", ["user_name", "id"]),
        IndexDefinition("request_log_by_user_record", ["user_record", "id"]),
    ])

    /// The console's charts (docs/console.md, "Health"): per node, minute and route, the
    /// requests answered, their error codes (`{"CODE": count}`) and a histogram of their times
    /// (counts per bucket of ``LatencyBuckets``), both as JSON; kept 24 hours.
    public static let metricMinutes = TableDefinition("metric_minutes", [
        ColumnDefinition("node", .text),
        ColumnDefinition("minute", .int64),
        ColumnDefinition("endpoint", .text),
        ColumnDefinition("requests", .int64),
        ColumnDefinition("errors", .text),
        ColumnDefinition("latency", .text),
    ], primaryKey: ["node", "minute", "endpoint"], indexes: [
        IndexDefinition("metric_minutes_by_minute", ["minute"]),
    ])

    /// What the users' records hold, sampled once a minute by any node; kept 24 hours.
    public static let storageSamples = TableDefinition("storage_samples", [
        ColumnDefinition("minute", .int64),
        ColumnDefinition("records", .int64),
        ColumnDefinition("bytes", .int64),
    ], primaryKey: ["minute"])

    /// The nodes serving the console, each seen at least every minute while it runs.
    public static let nodes = TableDefinition("nodes", [
        ColumnDefinition("name", .text),
        ColumnDefinition("started_at", .int64),
        ColumnDefinition("seen_at", .int64),
    ], primaryKey: ["name"])

    /// Counts revocations (its single row), so that servers holding tokens in memory notice one.
    public static let tokenRevocations = TableDefinition("token_revocations", [
        ColumnDefinition("id", .int32, check: "id = 1"),
        ColumnDefinition("seq", .int64),
    ], primaryKey: ["id"], copied: false)

    /// Server-to-server keys: each signs for a user, in public databases.
    public static let serverKeys = TableDefinition("server_keys", [
        .name("id"),
        ColumnDefinition("user_id", .int64, references: "users(id)"),
        .name("name"),
        ColumnDefinition("public_key", .bytes),
        ColumnDefinition("created_at", .int64),
    ], primaryKey: ["id"], indexes: [
        IndexDefinition("server_keys_by_user", ["user_id", "name"], unique: true),
    ])

    /// The SHA-256 of the signatures seen lately, so that none is accepted twice.
    public static let signaturesSeen = TableDefinition("signatures_seen", [
        ColumnDefinition("hash", .bytes),
        ColumnDefinition("seen_at", .int64),
    ], primaryKey: ["hash"], indexes: [
        IndexDefinition("signatures_seen_by_age", ["seen_at"]),
    ])

    /// API tokens: each lets a web app's signed-out visitors read one container and
    /// environment's public database, from the web origins it lists (space-separated), and
    /// says how the sign-in page hands the app its users' tokens: to the URL in
    /// `sign_in_callback` (URL Redirect), or by a message to its origin when it is `NULL`
    /// (Post Message).
    public static let apiTokens = TableDefinition("api_tokens", [
        ColumnDefinition("hash", .bytes),
        .name("container"),
        .name("environment"),
        .name("name"),
        ColumnDefinition("origins", .text),
        ColumnDefinition("created_at", .int64),
        ColumnDefinition("sign_in_callback", .text, nullable: true),
    ], primaryKey: ["hash"], indexes: [
        IndexDefinition("api_tokens_by_name", ["container", "environment", "name"], unique: true),
    ])

    /// Sign-ins through an identity provider under way on the web sign-in page
    /// (docs/protocol.md, "The web sign-in page"), by the SHA-256 of their `state`: what the
    /// answer from the provider is checked against (the browser that began it, the nonce, the
    /// PKCE verifier) and where the token goes (the API token and origin). Each is taken once,
    /// within ten minutes.
    public static let signInFlows = TableDefinition("sign_in_flows", [
        ColumnDefinition("state_hash", .bytes),
        .name("container"),
        .name("environment"),
        .name("api_token"),
        ColumnDefinition("origin", .text, nullable: true),
        .name("provider"),
        ColumnDefinition("nonce", .text),
        ColumnDefinition("verifier", .text),
        ColumnDefinition("browser_hash", .bytes),
        ColumnDefinition("created_at", .int64),
    ], primaryKey: ["state_hash"], indexes: [
        IndexDefinition("sign_in_flows_by_age", ["created_at"]),
    ])

    /// What each user's records hold (a record counts against its creator, or `charged_to`), kept by triggers
    /// on `records` (``routines``) and counted afresh by ``countUsageSQL`` after a copy.
    public static let userUsage = TableDefinition("user_usage", [
        .name("user_record"),
        ColumnDefinition("records", .int64),
        ColumnDefinition("bytes", .int64),
    ], primaryKey: ["user_record"], copied: false)

    // MARK: Containers, databases and zones

    /// `schema_locked`: the environment's schema takes only what it declares (docs/protocol.md,
    /// "Development and production"): production once deployed to, or created locked.
    public static let containers = TableDefinition("containers", [
        ColumnDefinition("id", .int64, generated: .rowid),
        .name("name"),
        .name("environment"),
        ColumnDefinition("schema_locked", .bool, default: .bool(false)),
    ], primaryKey: ["id"], uniques: [["name", "environment"]])

    /// `owner_id` is the user of a private database, 0 for the public one; `seq` numbers the
    /// database's zone-change feed.
    public static let databases = TableDefinition("databases", [
        ColumnDefinition("id", .int64, generated: .rowid),
        ColumnDefinition("container_id", .int64, references: "containers(id)"),
        ColumnDefinition("kind", .text),
        ColumnDefinition("owner_id", .int64),
        ColumnDefinition("uid", .uuid),
        ColumnDefinition("seq", .int64),
    ], primaryKey: ["id"], uniques: [["container_id", "kind", "owner_id"]])

    /// `seq` numbers the zone's record-change feed (never reset, so change tags stay unique
    /// across incarnations); `db_seq` places the zone's latest change in the database's feed;
    /// `uid` names the current incarnation.
    public static let zones = TableDefinition("zones", [
        ColumnDefinition("id", .int64, generated: .rowid),
        ColumnDefinition("database_id", .int64, references: "databases(id)"),
        .name("name"),
        ColumnDefinition("uid", .uuid),
        ColumnDefinition("seq", .int64),
        ColumnDefinition("db_seq", .int64),
        ColumnDefinition("deleted", .bool),
    ], primaryKey: ["id"], uniques: [["database_id", "name"]], indexes: [
        IndexDefinition("zones_by_db_seq", ["database_id", "db_seq"]),
    ])

    /// Every incarnation a zone had, by the `uid` its change tokens name.
    public static let zoneIncarnations = TableDefinition("zone_incarnations", [
        ColumnDefinition("uid", .uuid),
        ColumnDefinition("zone_id", .int64),
    ], primaryKey: ["uid"])

    /// The schema's fields (saves infer them in an unlocked schema; imports and deploys write
    /// them): each field's type, and its indexes and encryption as the schema language marks
    /// them. The system fields (`___createTime`, …) have rows only for their marks.
    public static let schemaFields = TableDefinition("schema_fields", [
        ColumnDefinition("container_id", .int64),
        .name("record_type"),
        .name("field"),
        ColumnDefinition("type", .text),
        ColumnDefinition("queryable", .bool, default: .bool(false)),
        ColumnDefinition("sortable", .bool, default: .bool(false)),
        ColumnDefinition("searchable", .bool, default: .bool(false)),
        ColumnDefinition("encrypted", .bool, default: .bool(false)),
    ], primaryKey: ["container_id", "record_type", "field"])

    /// The schema's record types (a type may have no field of its own).
    public static let schemaTypes = TableDefinition("schema_types", [
        ColumnDefinition("container_id", .int64),
        .name("record_type"),
    ], primaryKey: ["container_id", "record_type"])

    /// The schema's grants: what each grantee (`_world`, `_icloud`, `_creator` or a role) may do
    /// with a record type's records, as ``SchemaPermissionBits``.
    public static let schemaGrants = TableDefinition("schema_grants", [
        ColumnDefinition("container_id", .int64),
        .name("record_type"),
        .name("grantee"),
        ColumnDefinition("permissions", .int64),
    ], primaryKey: ["container_id", "record_type", "grantee"])

    /// The schema's roles (`CREATE ROLE`).
    public static let schemaRoles = TableDefinition("schema_roles", [
        ColumnDefinition("container_id", .int64),
        .name("role"),
    ], primaryKey: ["container_id", "role"])

    /// The roles each user holds in a container environment (docs/protocol.md, "Security
    /// roles"): given and taken by operators only (CloudKit keeps them in the `Users` record's
    /// `roles` field, which users never write); a role leaves with its user, and with the
    /// schema's `CREATE ROLE` when an import, deploy or reset drops it.
    public static let userRoles = TableDefinition("user_roles", [
        ColumnDefinition("container_id", .int64),
        ColumnDefinition("user_id", .int64, references: "users(id)"),
        .name("role"),
    ], primaryKey: ["container_id", "user_id", "role"], indexes: [
        IndexDefinition("user_roles_by_user", ["user_id"]),
    ])

    /// Every import, deploy, reset and lock of a schema: which operator, when, what it changed
    /// (`summary`, one change a line) and the schema after it (in the schema language).
    public static let schemaHistory = TableDefinition("schema_history", [
        ColumnDefinition("id", .int64, generated: .rowid),
        ColumnDefinition("container_id", .int64),
        ColumnDefinition("at", .int64),
        .name("operator"),
        ColumnDefinition("action", .text),
        ColumnDefinition("summary", .text),
        ColumnDefinition("schema", .text),
    ], primaryKey: ["id"], indexes: [
        IndexDefinition("schema_history_by_container", ["container_id", "id"]),
    ])

    // MARK: Records and references

    /// A reference field's key: `refs` stores it for the name. The order in which names were
    /// first stored orders a cascade's sources; a key never changes and is never removed.
    public static let refFields = TableDefinition("ref_fields", [
        ColumnDefinition("id", .int64, generated: .rowid),
        .name("name"),
    ], primaryKey: ["id"], uniques: [["name"]])

    /// Records: `fields` holds the typed fields as wire JSON; `seq` is the record's place in
    /// its zone's change feed; `asset_bytes` the bytes of the uploaded assets it holds;
    /// `parent` the record's parent in the zone (CloudKit's `parent`); `charged_to` the user
    /// whose usage it counts in when not its creator's (a participant's record: the owner's).
    public static let records = TableDefinition("records", [
        ColumnDefinition("zone_id", .int64),
        .name("name"),
        .name("type"),
        ColumnDefinition("tag", .text),
        ColumnDefinition("fields", .text),
        ColumnDefinition("created_at", .int64),
        .name("created_by"),
        ColumnDefinition("created_device", .text, nullable: true),
        ColumnDefinition("modified_at", .int64),
        .name("modified_by"),
        ColumnDefinition("modified_device", .text, nullable: true),
        ColumnDefinition("seq", .int64),
        ColumnDefinition("asset_bytes", .int64, default: .integer(0)),
        .name("parent", nullable: true),
        .name("charged_to", nullable: true),
    ], primaryKey: KeyColumns(["zone_id", "name"], sqlite: ["name", "zone_id"]), indexes: [
        IndexDefinition("records_by_seq", ["zone_id", "seq"]),
        IndexDefinition("records_by_type", ["zone_id", "type", "name"]),
        // A type's records newest first (the console's table), without sorting the zone; on
        // PostgreSQL in the order the query compiler writes (`SQLDialect.orderTerm`: descending
        // NULLS LAST, so ascending NULLS FIRST read backwards).
        IndexDefinition("records_by_modified", KeyColumns(["zone_id", "type", "modified_at DESC NULLS LAST"], sqlite: ["zone_id", "type", "modified_at"])),
        // A record's children, for the hierarchies record shares take (most records have none).
        IndexDefinition("records_by_parent", ["zone_id", "parent"], where: "parent IS NOT NULL"),
    ])

    /// One row per reference a record holds (each element of a reference list; the same
    /// target may appear with several actions): its field's key (`ref_fields`) and its
    /// action's code (``ReferenceActionCode``).
    public static let refs = TableDefinition("refs", [
        ColumnDefinition("zone_id", .int64),
        .name("source"),
        ColumnDefinition("field", .int64),
        .name("target"),
        ColumnDefinition("action", .int16),
    ], primaryKey: KeyColumns(["zone_id", "source", "field", "target", "action"], sqlite: ["source", "zone_id", "field", "target", "action"]), indexes: [
        IndexDefinition("refs_by_target", KeyColumns(["zone_id", "target", "action", "field", "source"], sqlite: ["target", "zone_id", "action", "field", "source"])),
        // The VALIDATE references alone, so that a cascading delete can tell in one probe
        // whether anything in the zone could block it.
        IndexDefinition("refs_validating", ["zone_id", "target"], where: "action = \(ReferenceActionCode.validate)"),
    ])

    /// Deleted records, for change feeds; removed when the name is saved again.
    public static let tombstones = TableDefinition("tombstones", [
        ColumnDefinition("zone_id", .int64),
        .name("name"),
        .name("type"),
        ColumnDefinition("seq", .int64),
    ], primaryKey: KeyColumns(["zone_id", "name"], sqlite: ["name", "zone_id"]), indexes: [
        IndexDefinition("tombstones_by_seq", ["zone_id", "seq"]),
    ])

    // MARK: Sharing

    /// Shares (docs/protocol.md, "Sharing"): a zone's share (`root` null) or the share of the
    /// hierarchy under record `root`, in an owner's private zone; the share record itself is the
    /// zone's record `name`. `short_guid` is what the share's URL carries.
    public static let shares = TableDefinition("shares", [
        ColumnDefinition("id", .int64, generated: .rowid),
        ColumnDefinition("zone_id", .int64, references: "zones(id)"),
        .name("name"),
        .name("root", nullable: true),
        .name("short_guid"),
        ColumnDefinition("public_permission", .text),
    ], primaryKey: ["id"], uniques: [["zone_id", "name"], ["short_guid"]])

    /// A share's participants other than its owner: a user (`user_id`), or, until someone
    /// with that verified address accepts, an address (`email`); how they take part
    /// (``SharePermission``, ``ShareParticipantType`` and ``ShareParticipantStatus`` names).
    public static let shareParticipants = TableDefinition("share_participants", [
        ColumnDefinition("share_id", .int64, references: "shares(id)"),
        .name("participant_id"),
        ColumnDefinition("user_id", .int64, nullable: true, references: "users(id)"),
        .name("email", nullable: true),
        ColumnDefinition("permission", .text),
        ColumnDefinition("type", .text),
        ColumnDefinition("status", .text),
    ], primaryKey: ["share_id", "participant_id"], indexes: [
        IndexDefinition("share_participants_by_user", ["user_id"]),
    ])

    /// The records that left a record share (its hierarchy lost them: moved, deleted, cut off)
    /// while its participants may have held them: each a deletion in their change feed, at its
    /// place `seq` in the zone's feed; removed when the record comes back or the share goes.
    public static let shareDepartures = TableDefinition("share_departures", [
        ColumnDefinition("share_id", .int64, references: "shares(id)"),
        .name("name"),
        .name("type"),
        ColumnDefinition("seq", .int64),
    ], primaryKey: ["share_id", "name"], indexes: [
        IndexDefinition("share_departures_by_seq", ["share_id", "seq"]),
    ])

    // MARK: Search

    /// The words of the records of searchable types (``searchTypes``), for
    /// `CONTAINS_ALL_TOKENS` and `CONTAINS_ANY_TOKENS`.
    public static let searchTokens = TableDefinition("search_tokens", [
        ColumnDefinition("zone_id", .int64),
        .name("name"),
        .name("field"),
        .name("token"),
    ], primaryKey: ["zone_id", "name", "field", "token"], indexes: [
        IndexDefinition("search_tokens_by_token", ["zone_id", "token", "field"], include: ["name"]),
    ])

    /// The word blocks of a zone: records whose words search index builds indexed
    /// (``searchPostings``, ``searchMembers``), numbered from 1 in each zone in the order
    /// built, each taking the steps' records until it holds `records` of a limit.
    public static let searchBlocks = TableDefinition("search_blocks", [
        ColumnDefinition("zone_id", .int64),
        ColumnDefinition("block", .int64),
        ColumnDefinition("records", .int64),
    ], primaryKey: ["zone_id", "block"])

    /// The words of a word block: for each word of a field and each step that added records
    /// to the block (`part`: how many it held before), the names of those records holding it,
    /// as a JSON array of strings in byte order. Keyed by block first, so that a build writes
    /// within the zone's last block; a search reads one range of each block of the zone.
    public static let searchPostings = TableDefinition("search_postings", [
        ColumnDefinition("zone_id", .int64),
        ColumnDefinition("block", .int64),
        .name("token"),
        .name("field"),
        ColumnDefinition("part", .int64),
        ColumnDefinition("names", .text),
    ], primaryKey: ["zone_id", "block", "token", "field", "part"])

    /// The records whose words a word block holds (in which part), while they do: a save that
    /// changes a record's words, or its delete, removes its row (its words are in
    /// ``searchTokens`` from then on), and a posting's names without a row here naming its
    /// block and part are not matched.
    public static let searchMembers = TableDefinition("search_members", [
        ColumnDefinition("zone_id", .int64),
        .name("name"),
        ColumnDefinition("block", .int64),
        ColumnDefinition("part", .int64),
    ], primaryKey: ["zone_id", "name"])

    /// Every record's locations, as a cell and a point on the unit sphere, for `NEAR` and
    /// sorting by distance.
    public static let searchLocations = TableDefinition("search_locations", [
        ColumnDefinition("zone_id", .int64),
        .name("name"),
        .name("field"),
        ColumnDefinition("cell", .int64),
        ColumnDefinition("x", .double),
        ColumnDefinition("y", .double),
        ColumnDefinition("z", .double),
    ], primaryKey: ["zone_id", "name", "field"], indexes: [
        IndexDefinition("search_locations_by_cell", ["zone_id", "field", "cell"], include: ["x", "y", "z", "name"]),
    ])

    /// The record types whose words are indexed: those a word search has named.
    public static let searchTypes = TableDefinition("search_types", [
        ColumnDefinition("container_id", .int64),
        .name("record_type"),
    ], primaryKey: ["container_id", "record_type"])

    /// The searchable types whose stored records are still being indexed: a row from the
    /// moment a type is marked until every record stored before is, with how far the build has
    /// come (the last record indexed, by zone key and name) and how many it has indexed.
    public static let searchBuilds = TableDefinition("search_builds", [
        ColumnDefinition("container_id", .int64),
        .name("record_type"),
        ColumnDefinition("after_zone", .int64, nullable: true),
        .name("after_name", nullable: true),
        ColumnDefinition("indexed", .int64),
        ColumnDefinition("started_at", .int64),
    ], primaryKey: ["container_id", "record_type"])

    // MARK: Assets

    /// The keys that sign asset URLs, shared by every server.
    public static let assetKeys = TableDefinition("asset_keys", [
        ColumnDefinition("id", .text),
        ColumnDefinition("secret", .bytes),
        ColumnDefinition("created_at", .int64),
    ], primaryKey: ["id"])

    /// Blobs by checksum, and since when no record holds one.
    public static let assetBlobs = TableDefinition("asset_blobs", [
        ColumnDefinition("checksum", .text),
        ColumnDefinition("size", .int64),
        ColumnDefinition("orphaned_at", .int64, nullable: true),
    ], primaryKey: ["checksum"], indexes: [
        IndexDefinition("asset_blobs_orphaned", ["orphaned_at"], where: "orphaned_at IS NOT NULL"),
    ])

    /// A blob's bytes in chunks (``assetChunkSize``), so that every server serves every asset;
    /// the SQLite engine keeps them in files under `assets/`.
    public static let assetChunks = TableDefinition("asset_chunks", [
        ColumnDefinition("checksum", .text),
        ColumnDefinition("idx", .int32),
        ColumnDefinition("bytes", .bytes),
    ], primaryKey: ["checksum", "idx"], dialects: [.postgres])

    /// The size of the chunks ``assetChunks`` holds.
    public static let assetChunkSize = 256 * 1024

    /// Upload receipts: what was uploaded, by whom, for which record type and field, and the
    /// record field it was bound to, once it is.
    public static let assetReceipts = TableDefinition("asset_receipts", [
        ColumnDefinition("receipt", .text),
        ColumnDefinition("checksum", .text),
        ColumnDefinition("size", .int64),
        ColumnDefinition("user_id", .int64),
        ColumnDefinition("container", .text),
        ColumnDefinition("environment", .text),
        ColumnDefinition("kind", .text),
        ColumnDefinition("zone_name", .text),
        ColumnDefinition("record_type", .text),
        ColumnDefinition("field", .text),
        ColumnDefinition("created_at", .int64),
        ColumnDefinition("bound_zone", .int64, nullable: true),
        ColumnDefinition("bound_record", .text, nullable: true),
        ColumnDefinition("bound_field", .text, nullable: true),
    ], primaryKey: ["receipt"], indexes: [
        IndexDefinition("asset_receipts_by_checksum", ["checksum"]),
    ])

    /// Which record fields hold which blob.
    public static let assetRefs = TableDefinition("asset_refs", [
        ColumnDefinition("zone_id", .int64),
        ColumnDefinition("record_name", .text),
        ColumnDefinition("field", .text),
        ColumnDefinition("checksum", .text),
    ], primaryKey: ["record_name", "zone_id", "field", "checksum"], indexes: [
        IndexDefinition("asset_refs_by_checksum", ["checksum"]),
    ])

    // MARK: Subscriptions and notifications

    /// Subscriptions, by owner and database; `body` is the wire JSON.
    public static let subscriptions = TableDefinition("subscriptions", [
        ColumnDefinition("container", .text),
        ColumnDefinition("environment", .text),
        ColumnDefinition("kind", .text),
        ColumnDefinition("user_id", .int64),
        ColumnDefinition("id", .text),
        ColumnDefinition("body", .text),
        ColumnDefinition("created_at", .int64),
    ], primaryKey: ["container", "environment", "kind", "user_id", "id"])

    /// The notifications subscriptions made, numbered (numbers only grow).
    public static let notifications = TableDefinition("notifications", [
        ColumnDefinition("id", .int64, generated: .serial),
        ColumnDefinition("user_id", .int64),
        ColumnDefinition("container", .text),
        ColumnDefinition("environment", .text),
        ColumnDefinition("payload", .text),
        ColumnDefinition("created_at", .int64),
    ], primaryKey: ["id"], indexes: [
        IndexDefinition("notifications_by_user", ["user_id", "container", "environment", "id"]),
        IndexDefinition("notifications_by_age", ["created_at"]),
    ])

    /// Webcourier tokens: whose notifications each delivers, from which number on (`floor`).
    public static let pushTokens = TableDefinition("push_tokens", [
        ColumnDefinition("token", .text),
        ColumnDefinition("user_id", .int64),
        ColumnDefinition("container", .text),
        ColumnDefinition("environment", .text),
        ColumnDefinition("floor", .int64),
        ColumnDefinition("created_at", .int64),
        ColumnDefinition("polled_at", .int64),
    ], primaryKey: ["token"])

    /// What each webcourier token delivered (numbers can commit out of order: none is skipped).
    public static let pushDeliveries = TableDefinition("push_deliveries", [
        ColumnDefinition("token", .text),
        ColumnDefinition("notification", .int64),
    ], primaryKey: ["token", "notification"])

    /// Every table, targets of foreign keys first (the order `data copy` fills them in).
    public static let tables: [TableDefinition] = [
        users, tokens, identities, accounts, accountCodes, signInAttempts, operators, operatorAudit, consoleSessions, requestLog, metricMinutes, storageSamples, nodes, tokenRevocations, serverKeys, signaturesSeen, apiTokens, signInFlows, userUsage,
        containers, databases, zones, zoneIncarnations, schemaFields, schemaTypes, schemaGrants, schemaRoles, userRoles, schemaHistory,
        refFields, records, refs, searchTokens, searchBlocks, searchPostings, searchMembers, searchLocations, searchTypes, searchBuilds, tombstones,
        shares, shareParticipants, shareDepartures,
        assetKeys, assetBlobs, assetReceipts, assetRefs, assetChunks,
        subscriptions, notifications, pushTokens, pushDeliveries,
    ]

    /// The tables of `dialect`.
    public static func tables(in dialect: SQLDialect) -> [TableDefinition] {
        tables.filter { $0.dialects.contains(dialect) }
    }

    /// The table named `name`.
    public static func table(_ name: String) -> TableDefinition? {
        tables.first { $0.name == name }
    }

    /// Every statement that makes the schema in an empty database of `dialect`: the tables,
    /// then ``routines``.
    public static func createStatements(in dialect: SQLDialect) -> [String] {
        tables(in: dialect).flatMap { $0.createStatements(in: dialect) } + routines.compactMap { $0.statement(in: dialect) }
    }
}

/// The stored bits of each permission a grant gives (`schema_grants.permissions`).
public enum SchemaPermissionBits {
    public static let create: Int64 = 1
    public static let read: Int64 = 2
    public static let write: Int64 = 4
}

/// The stored code of each reference action (`refs.action`).
public enum ReferenceActionCode {
    public static let none = 0
    public static let deleteSelf = 1
    public static let validate = 2
    public static let nullify = 3

    /// The code of `action`.
    public static func code(_ action: Reference.Action) -> Int {
        switch action {
        case .none: none
        case .deleteSelf: deleteSelf
        case .validate: validate
        case .nullify: nullify
        }
    }

    /// The code of `action` as SQL text: a literal in a statement, never a bound value, so that
    /// a statement's `action = 2` is the one `refs_validating`'s predicate names.
    public static func sql(_ action: Reference.Action) -> String { "\(code(action))" }

    /// The action of a stored code (`NONE` for one no action has).
    public static func action(_ code: Int) -> Reference.Action {
        Reference.Action.allCases.first { Self.code($0) == code } ?? .none
    }
}
