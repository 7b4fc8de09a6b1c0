import Foundation
import RecordModel

/// A storage engine: transactions over the tables every engine keeps (users and tokens,
/// containers, databases, zones and their incarnations, the inferred schema, records, references,
/// tombstones), and nothing of CloudKit's rules. The rules' `RecordStore` holds them and calls these.
///
/// Transactions are synchronous closures: an engine runs each on a connection of its own
/// (SQLite: GRDB's reader or writer queue; an engine over an asynchronous driver leases a
/// connection, runs the whole closure on a thread pool of its own, never on an event loop or
/// Swift's cooperative threads, and waits for each statement there). Whatever a closure throws
/// leaves the database as it was. A primitive lets its driver's errors through as they are, and
/// ``read(_:)`` and ``write(_:)`` turn them into ``RecordSyncError`` with `INTERNAL_ERROR`,
/// letting every other error through unchanged: the rules take a `RecordSyncError` thrown in the
/// middle of a transaction for one operation's failure (a non-atomic batch goes on), so a failed
/// statement must never look like one.
public protocol StorageEngine: Sendable {
    /// Runs `body` in a read transaction: one consistent snapshot, no writes.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) async throws -> T

    /// Runs `body` in a write transaction, serialised with every other write that touches the
    /// same zones, and commits or rolls back as it says. A throw rolls back.
    func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> WriteOutcome<T>) async throws -> T

    /// How servers sharing this storage tell each other of changes, or `nil` if one server owns
    /// it (the default).
    var changeRelay: (any ChangeRelay)? { get }

    /// Makes the field indexes on `records` (`SQLDialect.fieldIndex`) those of `wanted` whose
    /// type has one (`SQLDialect.indexedScalars`):
    /// builds the missing ones (PostgreSQL: concurrently, while writes go on; SQLite: in one
    /// write) and drops those no schema marks any more. Answers the names built and dropped;
    /// nothing when another server is doing it.
    func settleFieldIndexes(_ wanted: Set<FieldIndexKey>) async throws -> (built: [String], dropped: [String])

    /// ``StorageTransaction/database(at:withZoneNamed:)`` as a read of its own. The default
    /// runs it in ``read(_:)``; an engine whose transactions cost round trips and a hop to a
    /// thread of their own answers it with one statement, and may answer it on the caller's
    /// thread where that is cheaper than the hop (the change feed's read-ahead asks it before
    /// each page it serves).
    func database(at address: DatabaseAddress, withZoneNamed name: String) async throws -> (database: StoredDatabase, zone: StoredZone?)?

    /// ``read(_:)`` for a read a request bounds (one request's pages of a change feed): an
    /// engine may run it on the caller's thread where that is cheaper than the hop to a thread
    /// of its connection's and back. The default is ``read(_:)``.
    func boundedRead<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) async throws -> T

    /// Where asset bytes live.
    var assetBytes: any AssetByteStore { get }

    /// How the engine's connections are used now, if it counts them.
    var poolUse: PoolUse? { get }
}

extension StorageEngine {
    /// An engine that does not count its connections.
    public var poolUse: PoolUse? { nil }

    /// One server owns the storage: nothing to relay.
    public var changeRelay: (any ChangeRelay)? { nil }

    public func boundedRead<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) async throws -> T {
        try await read(body)
    }

    public func database(at address: DatabaseAddress, withZoneNamed name: String) async throws -> (database: StoredDatabase, zone: StoredZone?)? {
        try await read { try $0.database(at: address, withZoneNamed: name) }
    }
}

/// What a write transaction's body decided.
public enum WriteOutcome<Value> {
    /// Commit, then answer `Value`.
    case commit(Value)
    /// Roll back everything the transaction did, then answer `Value`.
    case rollback(Value)
}

/// The primitives of one transaction. Each reads or writes rows; none decides anything a
/// CloudKit client could notice beyond what it is told to store. Keys (`Int64`) are the
/// engine's own and mean nothing outside it. In a read transaction only the reading
/// primitives may be called.
public protocol StorageTransaction: AnyObject {
    // MARK: Users

    /// The user named `name`, or `nil`.
    func user(named name: String) throws -> User?
    /// Stores a user (the name is known to be free) and returns it with its new key.
    func insertUser(named name: String, recordName: String, createdAt: Int64) throws -> User
    /// Stores a token hash for a user under a name (known to be free among the user's tokens),
    /// with when it expires (milliseconds since 1970; `nil`: never).
    func insertToken(hash: Data, userKey: Int64, name: String, createdAt: Int64, expiresAt: Int64?) throws
    /// The user holding the token whose SHA-256 is `hash`, with when the token expires, or `nil`.
    func token(forHash hash: Data) throws -> (user: User, expiresAt: Int64?)?
    /// A user's tokens, by name.
    func tokens(ofUser key: Int64) throws -> [StoredToken]
    /// Removes a user's token by name; `false` if they had none of that name.
    func deleteToken(named name: String, ofUser key: Int64) throws -> Bool
    /// Removes the token whose SHA-256 is `hash`; `false` if there was none.
    func deleteToken(hash: Data) throws -> Bool
    /// The user an identity (an identity provider's issuer and subject) belongs to, or `nil`.
    func user(withIdentityIssuer issuer: String, subject: String) throws -> User?
    /// Stores an identity as a user's (the issuer and subject are known to be nobody's).
    func insertIdentity(_ identity: StoredIdentity, userKey: Int64) throws
    /// A user's identities, by issuer and subject.
    func identities(ofUser key: Int64) throws -> [StoredIdentity]
    /// The account of an email address (lower-cased), or `nil`.
    func account(withEmail email: String) throws -> (account: StoredAccount, user: User)?
    /// A user's account, or `nil` (they sign in otherwise).
    func account(ofUser key: Int64) throws -> StoredAccount?
    /// Stores a user's account (the user has none, the address is nobody's).
    func insertAccount(_ account: StoredAccount, userKey: Int64) throws
    /// Replaces an account's password hash.
    func setPasswordHash(_ hash: String, ofUser key: Int64, at time: Int64) throws
    /// Removes a user's tokens but the one whose SHA-256 is `keeping`; how many went.
    func deleteTokens(ofUser key: Int64, keeping: Data?) throws -> Int
    /// Stores a code (its hash known to be new); removes the codes expired before `now` first.
    func insertAccountCode(_ code: StoredAccountCode, now: Int64) throws
    /// The code whose SHA-256 is `hash`, or `nil`.
    func accountCode(hash: Data) throws -> StoredAccountCode?
    /// Removes the code whose SHA-256 is `hash`; `false` if there was none.
    func deleteAccountCode(hash: Data) throws -> Bool
    /// The codes of one kind for an address, newest first.
    func accountCodes(kind: String, email: String) throws -> [StoredAccountCode]
    /// Removes the codes of one kind for an address.
    func deleteAccountCodes(kind: String, email: String) throws
    /// The attempts counted under `key` and when their window began, or `nil`.
    func signInAttempts(key: String) throws -> (attempts: Int64, windowStart: Int64)?
    /// Counts one more attempt under `key`: in the window that began at `windowStart` if it is
    /// no older than `windowStart`, else in a new window starting `now`. Removes the
    /// windows begun before `windowStart` first.
    func countSignInAttempt(key: String, now: Int64, windowStart: Int64) throws
    /// Forgets the attempts counted under `key`.
    func clearSignInAttempts(key: String) throws
    /// Makes the identities and the account of user `from` user `to`'s (`to` has no account when
    /// `from` has one); answers how many identities moved and whether an account did.
    func moveSignIns(fromUser from: Int64, toUser to: Int64) throws -> (identities: Int, account: Bool)
    /// Stores an operator (the name and secret known to be new).
    func insertOperator(_ stored: StoredOperator) throws
    /// The operator whose secret's SHA-256 is `secretHash`, or `nil`.
    func storedOperator(secretHash: Data) throws -> StoredOperator?
    /// Every operator, by name.
    func storedOperators() throws -> [StoredOperator]
    /// Removes the operator named `name`; `false` if there was none.
    func deleteOperator(named name: String) throws -> Bool
    /// Stores a console session (its token's hash known to be new).
    func insertConsoleSession(_ session: StoredConsoleSession) throws
    /// The console session whose token's SHA-256 is `tokenHash`, with its operator as stored
    /// now, or `nil` (no such session, or its operator revoked).
    func consoleSession(tokenHash: Data) throws -> (session: StoredConsoleSession, operator: StoredOperator)?
    /// Sets when a console session was last used.
    func touchConsoleSession(tokenHash: Data, at: Int64) throws
    /// Removes a console session; `false` if there was none.
    func deleteConsoleSession(tokenHash: Data) throws -> Bool
    /// Removes the console sessions that ended before `now` or were idle since before
    /// `idleSince`, and every session of `operatorName` when given; how many went.
    func deleteConsoleSessions(endedBefore now: Int64, idleSince: Int64, ofOperator operatorName: String?) throws -> Int
    /// Adds requests to the request log.
    func insertRequests(_ requests: [StoredRequest]) throws
    /// The newest requests of the log that `filter` matches, newest first.
    func requests(matching filter: RequestLogFilter) throws -> [StoredRequest]
    /// Removes the requests answered before `before`, and the oldest beyond the newest
    /// `keepingAtMost`; how many went.
    func deleteRequests(before: Int64, keepingAtMost: Int64) throws -> Int
    /// Adds a node's minutes of requests (each node, minute and route written once).
    func insertMetricMinutes(_ minutes: [StoredMetricMinute]) throws
    /// Every node's minutes of requests from `minute` on.
    func metricMinutes(since minute: Int64) throws -> [StoredMetricMinute]
    /// What the users' records hold now: records and bytes.
    func storedTotals() throws -> (records: Int64, bytes: Int64)
    /// Sets the sample of `minute` (any node may; the last one stays).
    func setStorageSample(minute: Int64, records: Int64, bytes: Int64) throws
    /// The samples from `minute` on, oldest first.
    func storageSamples(since minute: Int64) throws -> [(minute: Int64, records: Int64, bytes: Int64)]
    /// Notes that `node` runs (started at `startedAt`), seen at `now`.
    func seeNode(_ node: String, startedAt: Int64, now: Int64) throws
    /// Every node seen since `since`, most recently seen first.
    func nodes(seenSince since: Int64) throws -> [(name: String, startedAt: Int64, seenAt: Int64)]
    /// Removes minutes, samples and nodes older than `before` (milliseconds since 1970).
    func deleteMetrics(before: Int64) throws
    /// Records what an operator did.
    func insertAuditEntry(_ entry: AuditEntry) throws
    /// The newest `limit` entries of the audit log, newest first.
    func auditEntries(limit: Int) throws -> [AuditEntry]
    /// The key of a container in an environment, or `nil` when nothing was ever stored in it.
    func containerKey(named name: String, environment: String) throws -> Int64?
    /// Every container in each environment something was stored in, by name, and whether its
    /// schema is locked.
    func containerNames() throws -> [(name: String, environment: String, locked: Bool)]
    /// A number that grows whenever a token stops being valid before its expiry (revoked, or its
    /// user deleted), so that servers holding tokens in memory know to read them again.
    func revocationSequence() throws -> Int64
    /// Adds one to ``revocationSequence()``.
    func advanceRevocationSequence() throws
    /// Removes a user and everything stored under their key outside their databases: tokens,
    /// identities, account (and the codes mailed to its address), server-to-server keys, profile, subscriptions, notifications and their deliveries,
    /// webcourier tokens, upload receipts, their ``usage(ofUser:)``.
    func deleteUser(_ key: Int64) throws
    /// What the records a user created (named by their `userRecordName`) hold, in every
    /// container and database: how many, and their bytes (each record's stored fields in UTF-8
    /// plus its ``RecordWrite/assetBytes``). The engine keeps it current with every record it
    /// stores, rewrites or removes, cascades and zone deletes included, and counts what was
    /// stored before it kept it in the migration that adds it.
    func usage(ofUser userRecordName: String) throws -> Usage
    /// Stores a server-to-server key (its ID and name known to be free).
    func insertServerKey(_ key: StoredServerKey, userKey: Int64) throws
    /// The server-to-server key with this ID and the user it signs for, or `nil`.
    func serverKey(id: String) throws -> (key: StoredServerKey, user: User)?
    /// A user's server-to-server keys, by name.
    func serverKeys(ofUser key: Int64) throws -> [StoredServerKey]
    /// Removes a user's server-to-server key by name; `false` if they had none of that name.
    func deleteServerKey(named name: String, ofUser key: Int64) throws -> Bool
    /// Stores an API token (its name known to be free in its container and environment).
    func insertAPIToken(_ token: StoredAPIToken) throws
    /// The API token whose value's SHA-256 is `hash`, or `nil`.
    func apiToken(forHash hash: Data) throws -> StoredAPIToken?
    /// Every API token, by container, environment and name.
    func apiTokens() throws -> [StoredAPIToken]
    /// Removes an API token by its container, environment and name; `false` if there was none.
    func deleteAPIToken(named name: String, container: String, environment: String) throws -> Bool
    /// Stores a web sign-in under way, forgetting those begun before `forgetBefore`.
    func insertSignInFlow(_ flow: StoredSignInFlow, forgetBefore: Int64) throws
    /// Removes and returns the web sign-in under way whose state's SHA-256 is `stateHash`, or
    /// `nil` when there is none.
    func takeSignInFlow(stateHash: Data) throws -> StoredSignInFlow?
    /// Remembers a signed request's signature (its SHA-256) as seen at `now`, forgetting those
    /// seen before `forgetBefore`; `false` if it was already remembered.
    func noteSignature(_ hash: Data, now: Int64, forgetBefore: Int64) throws -> Bool
    /// Every user, by name, with when they were created (milliseconds since 1970) and how many
    /// tokens they hold.
    func users() throws -> [(user: User, createdAt: Int64, tokens: Int)]
    /// A user's profile (email, names, discoverability); the empty profile for an unknown key.
    func profile(ofUser key: Int64) throws -> UserProfile
    /// Replaces a user's profile (its email is known to be free).
    func setProfile(_ profile: UserProfile, ofUser key: Int64) throws
    /// The users whose stored email is one of `emails` (as stored: trimmed and lowercased).
    func users(withEmails emails: [String]) throws -> [(user: User, profile: UserProfile)]
    /// The users whose record name is one of `names`.
    func users(withRecordNames names: [String]) throws -> [(user: User, profile: UserProfile)]

    // MARK: Assets

    /// Every key that signs asset URLs.
    func assetKeys() throws -> [AssetKey]
    /// Stores a new key.
    func insertAssetKey(_ key: AssetKey) throws
    /// Removes every key but those named.
    func deleteAssetKeys(except kept: [String]) throws
    /// Stores an upload's receipt.
    func insertAssetReceipt(_ receipt: AssetReceipt) throws
    /// The receipt named `receipt`, or `nil`.
    func assetReceipt(_ receipt: String) throws -> AssetReceipt?
    /// Records the record field a receipt's asset is bound to.
    func bindAssetReceipt(_ receipt: String, to binding: AssetBinding) throws
    /// Marks blob `checksum` held (clears its orphan time), locking its row against a
    /// concurrent collection; `false` if the blob has no row (it was collected).
    func adoptAssetBlob(_ checksum: String) throws -> Bool
    /// Replaces the blobs a record's fields hold.
    func replaceAssetRefs(inZone zone: Int64, record: String, refs: [(field: String, checksum: String)]) throws
    /// Removes the refs of records no longer stored (deleted, cascaded away, their zone
    /// deleted), then marks every held blob that no ref holds as orphaned since `now`.
    func sweepAssetRefs(now: Int64) throws
    /// Deletes the rows (and the receipts) of blobs orphaned before `cutoff` that no ref holds,
    /// and answers their checksums (bytes the engine keeps in its tables go with them).
    func collectAssetBlobs(orphanedBefore cutoff: Int64) throws -> [String]
    /// The blobs that the refs of these zones and this user's upload receipts hold.
    func assetChecksums(inZones zones: [Int64], receiptsOfUser user: Int64) throws -> [String]
    /// Deletes the rows of those of these blobs that no ref and no receipt holds, and answers
    /// their checksums (as ``collectAssetBlobs(orphanedBefore:)``).
    func collectUnheldAssetBlobs(_ checksums: [String]) throws -> [String]

    // MARK: Subscriptions and notifications

    /// The subscriptions of a database kind in a container and environment: one user's, or
    /// (`user` nil) every user's.
    func subscriptions(inContainer container: String, environment: String, kind: String, user: Int64?) throws -> [StoredSubscription]
    /// Stores a subscription, replacing one of the same owner, database and ID.
    func putSubscription(_ subscription: StoredSubscription) throws
    /// Removes a subscription; `false` if there was none.
    func deleteSubscription(user: Int64, container: String, environment: String, kind: String, id: String) throws -> Bool
    /// Queues a notification for a user; numbers only grow.
    func insertNotification(user: Int64, container: String, environment: String, payload: String, createdAt: Int64) throws
    /// The highest notification number so far (0 when none).
    func latestNotificationNumber() throws -> Int64
    /// Stores a webcourier token.
    func insertPushToken(_ token: StoredPushToken, createdAt: Int64) throws
    /// The webcourier token `token`, or `nil`.
    func pushToken(_ token: String) throws -> StoredPushToken?
    /// The oldest notification of the token's user, container and environment above its floor
    /// that the token has not delivered, claimed as delivered by it (`nil`: none).
    func claimNotification(for token: StoredPushToken, at now: Int64) throws -> String?
    /// Removes notifications (and their deliveries) made before `cutoff`, and tokens not polled
    /// since it.
    func deleteNotifications(before cutoff: Int64) throws
    /// The names a collected cascade will delete (``collectCascade(from:inZone:)`` ran last).
    func doomedNames() throws -> [String]

    // MARK: Databases and zones

    /// The database at `address`, or `nil` if none was stored yet.
    func database(at address: DatabaseAddress) throws -> StoredDatabase?
    /// Stores the database at `address` (creating its container row if needed) with feed number 0.
    func insertDatabase(at address: DatabaseAddress, uid: UUID) throws -> StoredDatabase
    /// Adds `step` to a database's zone-feed number and returns the new number. A write transaction
    /// that calls this holds the database's number until it ends.
    func advanceDatabaseSequence(_ database: Int64, by step: Int64) throws -> Int64
    /// The keys of every database, public and private, of every container and environment.
    func databaseKeys() throws -> [Int64]
    /// The zones of a database whose place in the database feed is after `sequence`, in feed
    /// order, at most `limit`; deleted zones only if their place is also after `deletionFloor`.
    func zoneChanges(in database: Int64, after sequence: Int64, deletionFloor: Int64, limit: Int) throws -> [ZoneChangeRow]

    /// The zone named `name` of a database, live or deleted, or `nil`.
    func zone(named name: String, in database: Int64) throws -> StoredZone?
    /// The database at `address` and its zone named `name` (live or deleted, or `nil`), or
    /// `nil` if no database was stored there yet: ``database(at:)`` and
    /// ``zone(named:in:)`` at once, for the reads of one zone. The default calls both; an engine
    /// where each statement is a round trip answers with one.
    func database(at address: DatabaseAddress, withZoneNamed name: String) throws -> (database: StoredDatabase, zone: StoredZone?)?
    /// The live zones of a database, by name (byte order).
    func liveZones(in database: Int64) throws -> [StoredZone]
    /// Stores a new live zone with record-feed number 0.
    func insertZone(named name: String, in database: Int64, uid: UUID, databaseSequence: Int64) throws -> Int64
    /// Makes a deleted zone live again as the incarnation `uid`.
    func reviveZone(_ zone: Int64, uid: UUID, databaseSequence: Int64) throws
    /// Marks a zone deleted (its contents are removed with ``deleteZoneContents(_:)``).
    func markZoneDeleted(_ zone: Int64, databaseSequence: Int64) throws
    /// Removes every record, reference and tombstone of a zone, touching no other zone.
    func deleteZoneContents(_ zone: Int64) throws
    /// The keys of a user's private databases, in every container and environment.
    func privateDatabases(ofUser key: Int64) throws -> [Int64]
    /// Every zone of a database, live or deleted.
    func zones(in database: Int64) throws -> [StoredZone]
    /// Removes a database, its zones and their incarnations (their contents are already gone:
    /// ``deleteZoneContents(_:)``).
    func deleteDatabase(_ database: Int64) throws
    /// Remembers that `uid` named an incarnation of `zone`.
    func insertIncarnation(_ uid: UUID, of zone: Int64) throws
    /// The zone that `uid` named an incarnation of, or `nil`.
    func zone(ofIncarnation uid: UUID) throws -> Int64?
    /// The zone's record-feed number, read so that no other writer can take a number of this
    /// zone until this transaction ends (SQLite: its writes are serialised anyway; an engine with
    /// concurrent writers locks the zone's row).
    func lockZoneForWriting(_ zone: Int64) throws -> Int64
    /// Stores a zone's record-feed number and its place in the database feed.
    func setZoneSequence(_ zone: Int64, to sequence: Int64, databaseSequence: Int64) throws

    // MARK: Sharing

    /// Stores a share (its key is ignored) and returns its key.
    func insertShare(_ share: StoredShare) throws -> Int64
    /// The shares of a zone's records (its zone share among them), by record name.
    func shares(inZone zone: Int64) throws -> [StoredShare]
    /// The share with short GUID `shortGUID`, the zone holding it, and who owns it in which
    /// container environment.
    func share(shortGUID: String) throws -> LocatedShare?
    /// Sets a share's public permission.
    func setPublicPermission(_ permission: SharePermission, ofShare share: Int64) throws
    /// Deletes a share and its participants.
    func deleteShare(_ share: Int64) throws
    /// A share's participants, by participant ID.
    func participants(ofShare share: Int64) throws -> [StoredParticipant]
    /// Stores a participant of a share, replacing the one with its ID.
    func saveParticipant(_ participant: StoredParticipant, ofShare share: Int64) throws
    /// Removes a participant from a share; `false` when it was not one.
    func deleteParticipant(_ participantID: String, ofShare share: Int64) throws -> Bool
    /// The shares of zone `zone` in which user `user` is an accepted participant, with that
    /// participation.
    func participation(ofUser user: Int64, inZone zone: Int64) throws -> [(share: StoredShare, participant: StoredParticipant)]
    /// The names of the records of zone `zone` whose parent is `name`.
    func children(of name: String, inZone zone: Int64) throws -> [String]
    /// Those of `names` that a record of zone `zone` names as its parent.
    func namedAsParent(_ names: [String], inZone zone: Int64) throws -> Set<String>
    /// Record `root` of zone `zone` (if stored) and every record whose parent leads to it: names
    /// and types.
    func hierarchy(below root: String, inZone zone: Int64) throws -> [(name: String, recordType: String)]
    /// Notes that `records` left record share `share`, at feed places `firstSequence`,
    /// `firstSequence + 1`, … (replacing an earlier departure of the same name).
    func insertDepartures(_ records: [(name: String, recordType: String)], ofShare share: Int64, firstSequence: Int64) throws
    /// Forgets the departures of records `names` from share `share` (they came back).
    func deleteDepartures(named names: [String], ofShare share: Int64) throws
    /// The departures from `shares` after place `sequence` of their zone's feed, in feed order,
    /// of `recordTypes` only if given, at most `limit`, each a deleted record of zone `zoneID`.
    func departures(ofShares shares: [Int64], zoneID: ZoneID, after sequence: Int64, recordTypes: [String]?, limit: Int) throws -> [FeedChange]
    /// Gives records `names` of zone `zone` new places in its feed, `firstSequence`,
    /// `firstSequence + 1`, …, their tags unchanged (records that joined a share's hierarchy
    /// without being written).
    func moveInFeed(_ names: [String], inZone zone: Int64, firstSequence: Int64) throws
    /// Record `name` of zone `zone` (if stored) and its stored ancestors, nearest first (at most
    /// `limit` of them).
    func hierarchy(above name: String, inZone zone: Int64, limit: Int) throws -> [String]
    /// The records holding the asset `checksum` in zones with a share user `user` accepted,
    /// each with that share's root (`nil`: a zone share), at most `limit` of them.
    func sharedHolders(ofAsset checksum: String, user: Int64, limit: Int) throws -> [SharedAssetHolder]
    /// The live zones shared with user `user` in a container environment (their shared
    /// database), by owner and zone name.
    func sharedZones(ofUser user: Int64, container: String, environment: String) throws -> [SharedZone]

    // MARK: Schema

    /// The stored field types of a record type of a container.
    func schema(of recordType: String, inContainer container: Int64) throws -> [String: FieldType]
    /// The stored field types of every record type of a container, by type.
    func schemas(inContainer container: Int64) throws -> [String: [String: FieldType]]
    /// Stores a field's type unless the field already has one.
    func addSchemaField(_ field: String, type: FieldType, of recordType: String, inContainer container: Int64) throws
    /// A record type as saves check it: whether the container's schema is locked, whether it
    /// has the type, and the type's fields.
    func typeSchema(of recordType: String, inContainer container: Int64) throws -> StoredTypeSchema
    /// Stores a record type, with `grants`, unless the schema already has it.
    func addSchemaType(_ recordType: String, grants: [SchemaGrant], inContainer container: Int64) throws
    /// The container's whole schema: roles, types, fields with their marks, grants.
    func storedSchema(inContainer container: Int64) throws -> CloudKitSchema
    /// Every record type's fields with their marks (the system fields only where marked; a
    /// type without a field has an empty list), and whether the container's schema is locked:
    /// what a query plans with, in one read.
    func schemaIndexes(inContainer container: Int64) throws -> (locked: Bool, types: [String: [SchemaField]])

    /// Every unencrypted field (not a system field) some container's schema, in any record
    /// type, marks `QUERYABLE` or `SORTABLE`, with its type: what the records' field indexes
    /// cover (``StorageEngine/settleFieldIndexes(_:)``).
    func markedFields() throws -> [(field: String, type: FieldType)]
    /// Marks a field (of type `type`) with an index: a field the type has, or a system field
    /// of a type the schema has (nothing otherwise).
    func markIndex(_ index: SchemaIndexUse.Index, onField field: String, type: FieldType, of recordType: String, inContainer container: Int64) throws
    /// Makes the container's schema `schema` (replacing all it held); users lose the roles it
    /// no longer has.
    func replaceSchema(with schema: CloudKitSchema, inContainer container: Int64) throws
    /// The grants of the record types of the container's schema, by type (a type granting
    /// nothing is absent).
    func grants(inContainer container: Int64) throws -> [String: [SchemaGrant]]
    /// The users of the keys `users` (those that exist), each with the roles it holds in the container.
    func usersWithRoles(_ users: [Int64], inContainer container: Int64) throws -> [(user: User, roles: Set<String>)]
    /// Every role a user holds in the container: the role and the user's name, by role then name.
    func roleHolders(inContainer container: Int64) throws -> [(role: String, user: String)]
    /// Gives a user a role (`false`: held already), or takes it (`false`: not held).
    func setRole(_ role: String, held: Bool, byUser user: Int64, inContainer container: Int64) throws -> Bool
    /// Whether the container's schema is locked.
    func isSchemaLocked(inContainer container: Int64) throws -> Bool
    /// Locks or unlocks the container's schema.
    func setSchemaLocked(_ locked: Bool, inContainer container: Int64) throws
    /// The key of a container in an environment, stored first if new (a new production
    /// container's schema locked).
    func ensureContainer(named name: String, environment: String) throws -> Int64
    /// Records a change to the container's schema.
    func appendSchemaHistory(_ entry: SchemaHistoryEntry, inContainer container: Int64) throws
    /// The latest changes to the schemas of the container named `name` in `environment` (both
    /// when `nil`), newest first.
    func schemaHistory(ofContainer name: String, environment: String?, limit: Int) throws -> [SchemaHistoryEntry]
    /// Orders this transaction against others that change the container's schema, until it
    /// ends: `exclusive` for an import, deploy, reset or lock, shared for a write that checks
    /// or adds to the schema (an engine with concurrent writers locks; SQLite's writes are
    /// serialised already).
    func lockSchema(inContainer container: Int64, exclusive: Bool) throws
    /// Up to `limit` records of the container of type `recordType` (holding a value for
    /// `field`, when given), ordered by database, zone and name.
    func records(ofType recordType: String, holding field: String?, inContainer container: Int64, limit: Int) throws -> [SchemaRecordInUse]

    // MARK: Records and references

    /// The stored records among `names` (any order; missing names are left out), each given `zoneID`.
    func records(named names: [String], inZone zone: Int64, zoneID: ZoneID) throws -> [Record]
    /// One stored record, or `nil`.
    func record(named name: String, inZone zone: Int64, zoneID: ZoneID) throws -> Record?
    /// Whether a record of that name is stored in the zone.
    func recordExists(named name: String, inZone zone: Int64) throws -> Bool
    /// Whether the zone holds any tombstone.
    func zoneHasTombstones(_ zone: Int64) throws -> Bool
    /// Stores a new record (none of that name is stored in the zone).
    func insertRecord(_ row: RecordWrite, inZone zone: Int64) throws
    /// Rewrites a stored record (its creation stamp stays as stored).
    func updateRecord(_ row: RecordWrite, inZone zone: Int64) throws
    /// Removes the tombstone of `name`, if the zone holds one.
    func removeTombstone(named name: String, inZone zone: Int64) throws
    /// Stores the reference field names not stored yet, in the order given: the order in which
    /// field names were first stored orders a cascade's sources (the rules' `CascadeOrder`). Names stored
    /// in a savepoint that is undone are forgotten with it.
    func registerReferenceFields(_ names: [String]) throws
    /// Removes every reference `source` holds.
    func removeReferences(from source: String, inZone zone: Int64) throws
    /// Stores the references `source` holds (each element of a list once per action).
    func insertReferences(_ references: [(field: String, reference: Reference)], from source: String, inZone zone: Int64) throws
    /// The record types of a container whose words are indexed: those a word search (or a
    /// query subscription holding one) has named (the rules' `SearchTypes`). A writing transaction reads
    /// them before it writes a record's search rows; on an engine where several servers write
    /// at once, reading them also holds off ``markSearchable(_:inContainer:)`` until the
    /// transaction ends, so that no record of a type being marked is written unindexed.
    func searchableTypes(inContainer container: Int64) throws -> Set<String>
    /// Marks a record type searchable; `false` when it already was. Waits for the
    /// transactions that read the searchable types before (see ``searchableTypes(inContainer:)``).
    func markSearchable(_ recordType: String, inContainer container: Int64) throws -> Bool
    /// The types of a container whose stored records are still being indexed
    /// (``startSearchBuild(_:)``).
    func searchBuilds(inContainer container: Int64) throws -> Set<String>
    /// Records that the records of a type just marked searchable are to be indexed, from
    /// the first on.
    func startSearchBuild(_ build: SearchBuild) throws
    /// Takes the build of `recordType` in `container` (or, with `nil`s, the build that has
    /// indexed the fewest records, so that a small type's build is not held up behind a large
    /// one's) for this transaction: on an engine where several servers write at once, the build
    /// row stays locked to the transaction's end (another taking any build skips it, one taking
    /// this one waits), and the container's schema lock is taken alone, so that no write of
    /// its records runs meanwhile. `nil` when there is no such build (or, asking for any,
    /// none free).
    func takeSearchBuild(inContainer container: Int64?, ofType recordType: String?) throws -> SearchBuild?
    /// Stores how far a taken build has come; with `finished`, removes it (and brings the
    /// planner's statistics of the word blocks' tables up to date, where it has them).
    func updateSearchBuild(_ build: SearchBuild, finished: Bool) throws
    /// The records of a type in every zone of the container, by zone key and name, after
    /// `after`, at most `limit`: their names and stored fields (what marking a type searchable
    /// indexes). On an engine where several servers write at once, the rows read are locked
    /// (shared) to the transaction's end.
    func records(ofType recordType: String, inContainer container: Int64, after: (zone: Int64, name: String)?, limit: Int) throws
        -> [(zone: Int64, name: String, fields: String)]
    /// Removes the search rows of the record `name`: its text tokens (`search_tokens`), its
    /// place in a word block (`search_members`) and its locations (`search_locations`).
    func removeSearchIndex(of name: String, inZone zone: Int64) throws
    /// Stores the search rows of the record `name` (``SearchIndex``: worked out by the rules,
    /// so that every engine stores the same).
    func insertSearchIndex(_ index: SearchIndex, of name: String, inZone zone: Int64) throws
    /// Stores a search index build step's words of records of one zone in the zone's last
    /// word block while it holds fewer than `capacity` records, else in a new one; a record
    /// already in a block of the zone is in this one from then on.
    func insertSearchBlock(_ block: SearchWordBlock, capacity: Int) throws

    // MARK: Deletes and cascades

    /// Whether any record of the zone holds a `VALIDATE` reference.
    func anyValidatingReference(inZone zone: Int64) throws -> Bool
    /// Collects the records deleting `root` removes: `root`, then every record holding a
    /// `DELETE_SELF` reference to a collected record, transitively (cycles end), never loading
    /// them into memory. The order is the contract's (the rules' `CascadeOrder`): root first, then
    /// breadth first, each level in the order of the level before, each record's sources by
    /// (the order their field names were first stored, then name in byte order).
    ///
    /// - Returns: how many records were collected, `root` included.
    func collectCascade(from root: String, inZone zone: Int64) throws -> Int
    /// Notes, for delete operation `operation`, the collected records that a record of the zone
    /// holds a `VALIDATE` reference to (for ``validatingBlockers(inZone:)``).
    func noteValidatedInCascade(operation: Int, inZone zone: Int64) throws
    /// Deletes the collected records: a tombstone each, numbered `firstSequence`,
    /// `firstSequence + 1`, … in collection order, their references, their rows.
    ///
    /// - Returns: the collected names other than `root`, in byte order.
    func deleteCascade(root: String, inZone zone: Int64, firstSequence: Int64) throws -> [String]
    /// Collects the records of the zone, not collected by the cascade, that hold a `NULLIFY`
    /// reference to a collected record (``collectCascade(from:inZone:)`` ran last), numbered
    /// from 1 in byte order of name, never loading them into memory.
    ///
    /// - Returns: how many.
    func collectNullifying(inZone zone: Int64) throws -> Int
    /// The records ``collectNullifying(inZone:)`` numbered within `positions`, in that order,
    /// each with its `NULLIFY` references to collected records.
    func nullifyingRecords(inZone zone: Int64, positions: ClosedRange<Int>) throws -> [NullifyingRecord]
    /// Removes the `NULLIFY` references the records ``collectNullifying(inZone:)`` collected
    /// hold to collected records.
    func removeNullifiedReferences(inZone zone: Int64) throws
    /// Forgets what ``noteValidatedInCascade(operation:inZone:)`` noted.
    func startDeleteRound() throws
    /// For each delete operation with noted records, the record still stored that holds a
    /// `VALIDATE` reference to one of them: the first by target (byte order), then by the order
    /// its field name was first stored, then by source (byte order), so that every engine names
    /// the same one.
    func validatingBlockers(inZone zone: Int64) throws -> [ValidatingBlocker]

    // MARK: Change feed and queries

    /// The zone's changes after a place in its feed, in feed order, at most `limit`: records
    /// whose number is after `sequence` and tombstones whose number is after `tombstonesAfter`,
    /// of `recordTypes` only if given. Fields stay the stored text. Reads only the changes it
    /// returns, never the zone.
    func changes(inZone zone: Int64, zoneID: ZoneID, after sequence: Int64, tombstonesAfter: Int64,
                 recordTypes: [String]?, limit: Int) throws -> [FeedChange]
    /// The changes of records `names` of zone `zone` after place `sequence` of its feed, in
    /// feed order, at most `limit`, of `recordTypes` only if given (no tombstones): a record
    /// share's part of the feed, read by name, never by walking the zone.
    func changes(ofRecords names: [String], inZone zone: Int64, zoneID: ZoneID, after sequence: Int64, recordTypes: [String]?, limit: Int) throws -> [FeedChange]
    /// The references to `target` in a zone from the first `limit` records (by name) after
    /// `source`, ordered by source and field: (source, field name, action).
    func references(to target: String, inZone zone: Int64, after source: String?, limit: Int) throws -> [(source: String, field: String, action: Reference.Action)]
    /// The records of `zones` that match `query`, in its order, after `marker`, at most `limit`,
    /// each with its zone's key and the values of its sort keys (for the next marker).
    ///
    /// - Throws: `BAD_REQUEST` for a filter or sort key the engine cannot run.
    func query(_ query: Query, inZones zones: [Int64: ZoneID], schema: QuerySchema,
               after marker: ContinuationMarker?, limit: Int) throws -> [QueryMatch]

    // MARK: Savepoints

    /// Runs `body` in a savepoint: kept if it returns `true`, undone if it returns `false` or throws.
    func savepoint(_ body: () throws -> Bool) throws
}

extension StorageTransaction {
    /// Adds one to a database's zone-feed number and returns the new number.
    public func advanceDatabaseSequence(_ database: Int64) throws -> Int64 {
        try advanceDatabaseSequence(database, by: 1)
    }

    public func database(at address: DatabaseAddress, withZoneNamed name: String) throws -> (database: StoredDatabase, zone: StoredZone?)? {
        guard let database = try database(at: address) else { return nil }
        return (database, try zone(named: name, in: database.key))
    }
}

/// A database as the engine files it: container, environment, kind, and owner (a user's key
/// for a private database, 0 for the public one).
public struct DatabaseAddress: Sendable, Hashable {
    /// The container identifier.
    public var container: String
    /// `development` or `production`.
    public var environment: String
    /// Public or private.
    public var kind: DatabaseKind
    /// The owner's user key for a private database, 0 for the public one.
    public var ownerKey: Int64

    /// A database's address.
    public init(container: String, environment: String, kind: DatabaseKind, ownerKey: Int64) {
        self.container = container
        self.environment = environment
        self.kind = kind
        self.ownerKey = ownerKey
    }
}

/// A stored database.
public struct StoredDatabase: Sendable {
    /// The engine's key of the database.
    public var key: Int64
    /// The engine's key of its container (the schema is per container).
    public var containerKey: Int64
    /// Names the database in its change tokens.
    public var uid: UUID
    /// The last number of its zone feed.
    public var sequence: Int64

    /// A stored database's values.
    public init(key: Int64, containerKey: Int64, uid: UUID, sequence: Int64) {
        self.key = key
        self.containerKey = containerKey
        self.uid = uid
        self.sequence = sequence
    }
}

/// What a user may let others find them by (the rules' `RecordStore.setProfile(ofUserNamed:_:)`).
public struct UserProfile: Sendable, Hashable {
    /// The email address, trimmed and lowercased; unique among users.
    public var email: String?
    public var givenName: String?
    public var familyName: String?
    /// Whether other users may find this one by email or record name.
    public var discoverable: Bool

    public init(email: String? = nil, givenName: String? = nil, familyName: String? = nil, discoverable: Bool = false) {
        self.email = email
        self.givenName = givenName
        self.familyName = familyName
        self.discoverable = discoverable
    }
}

/// A stored zone.
/// A share as stored (docs/protocol.md, "Sharing").
public struct StoredShare: Sendable, Hashable {
    public var key: Int64
    /// The zone holding the share record.
    public var zoneKey: Int64
    /// The share record's name.
    public var recordName: String
    /// The root of a record share; `nil` for a zone share.
    public var root: String?
    public var shortGUID: String
    public var publicPermission: SharePermission

    public init(key: Int64 = 0, zoneKey: Int64, recordName: String, root: String?, shortGUID: String, publicPermission: SharePermission) {
        self.key = key
        self.zoneKey = zoneKey
        self.recordName = recordName
        self.root = root
        self.shortGUID = shortGUID
        self.publicPermission = publicPermission
    }
}

/// A share's participant other than its owner, as stored.
public struct StoredParticipant: Sendable, Hashable {
    public var id: String
    /// The participant's user, once known (an invitation by address names none until accepted).
    public var user: User?
    /// The address an invitation names.
    public var email: String?
    public var permission: SharePermission
    public var type: ShareParticipantType
    public var status: ShareParticipantStatus

    public init(id: String, user: User?, email: String?, permission: SharePermission, type: ShareParticipantType, status: ShareParticipantStatus) {
        self.id = id
        self.user = user
        self.email = email
        self.permission = permission
        self.type = type
        self.status = status
    }
}

/// A record holding an asset in a zone shared with a user (``StorageTransaction/sharedHolders(ofAsset:user:limit:)``).
public struct SharedAssetHolder: Sendable, Hashable {
    public var zoneKey: Int64
    public var recordName: String
    /// The root of the share it is shared through; `nil` for a zone share.
    public var root: String?

    public init(zoneKey: Int64, recordName: String, root: String?) {
        self.zoneKey = zoneKey
        self.recordName = recordName
        self.root = root
    }
}

/// A share found by its short GUID, with where it lives.
public struct LocatedShare: Sendable {
    public var share: StoredShare
    public var zone: StoredZone
    public var databaseKey: Int64
    public var containerKey: Int64
    public var container: String
    public var environment: String
    public var owner: User

    public init(share: StoredShare, zone: StoredZone, databaseKey: Int64, containerKey: Int64, container: String, environment: String, owner: User) {
        self.share = share
        self.zone = zone
        self.databaseKey = databaseKey
        self.containerKey = containerKey
        self.container = container
        self.environment = environment
        self.owner = owner
    }
}

/// A zone in a user's shared database: the zone, its owner, and the user's participation.
public struct SharedZone: Sendable {
    public var zone: StoredZone
    public var owner: User
    public var share: StoredShare
    public var participant: StoredParticipant

    public init(zone: StoredZone, owner: User, share: StoredShare, participant: StoredParticipant) {
        self.zone = zone
        self.owner = owner
        self.share = share
        self.participant = participant
    }
}

public struct StoredZone: Sendable {
    /// The engine's key of the zone.
    public var key: Int64
    /// The zone's name.
    public var name: String
    /// The current incarnation.
    public var uid: UUID
    /// The last number of its record feed.
    public var sequence: Int64
    /// Whether the zone is deleted (its row stays, so its feed numbers go on if it comes back).
    public var deleted: Bool

    /// A stored zone's values.
    public init(key: Int64, name: String, uid: UUID, sequence: Int64, deleted: Bool) {
        self.key = key
        self.name = name
        self.uid = uid
        self.sequence = sequence
        self.deleted = deleted
    }
}

/// A zone's entry in its database's feed.
public struct ZoneChangeRow: Sendable {
    /// The zone's name.
    public var name: String
    /// Whether the zone is deleted.
    public var deleted: Bool
    /// The zone's place in the database feed.
    public var sequence: Int64

    /// An entry's values.
    public init(name: String, deleted: Bool, sequence: Int64) {
        self.name = name
        self.deleted = deleted
        self.sequence = sequence
    }
}

/// A record as a save writes it.
public struct RecordWrite {
    /// The record's name.
    public var name: String
    /// The record's type.
    public var recordType: String
    /// Its change tag (its feed number in base 36).
    public var changeTag: String
    /// The fields' stored form (the wire JSON text).
    public var fields: String
    /// When and by whom it was created (an update keeps the stored one).
    public var created: Stamp
    /// When and by whom it was last saved.
    public var modified: Stamp
    /// Its place in the zone's feed.
    public var sequence: Int64
    /// The bytes of the uploaded assets it holds (the rules' `UsageRules.assetBytes(of:)`), counted in
    /// its creator's usage with its stored fields; `nil` on an update: as stored.
    public var assetBytes: Int64?
    /// Its parent's name (an update writes it too: a rewrite passes the stored one).
    public var parent: String?
    /// On an insert: the user whose usage the record counts in, when not its creator (an
    /// update keeps the stored one).
    public var chargedTo: String?

    /// A row's values.
    public init(name: String, recordType: String, changeTag: String, fields: String, created: Stamp, modified: Stamp, sequence: Int64,
                assetBytes: Int64?, parent: String? = nil, chargedTo: String? = nil) {
        self.name = name
        self.recordType = recordType
        self.changeTag = changeTag
        self.fields = fields
        self.created = created
        self.modified = modified
        self.sequence = sequence
        self.assetBytes = assetBytes
        self.parent = parent
        self.chargedTo = chargedTo
    }
}

/// An entry of a change page: a record (fields as stored text) or a tombstone, with its number.
public struct FeedChange: Sendable {
    /// The change's number in its zone's feed.
    public var sequence: Int64
    /// The record (fields as stored text) or the tombstone (a record marked deleted).
    public var entry: StoredZoneChanges.Entry

    /// A change's values.
    public init(sequence: Int64, entry: StoredZoneChanges.Entry) {
        self.sequence = sequence
        self.entry = entry
    }
}

/// A record holding `NULLIFY` references to records a delete removes.
public struct NullifyingRecord: Sendable {
    public var name: String
    public var recordType: String
    /// Its fields' stored text.
    public var fields: String
    public var created: Stamp
    /// Its `NULLIFY` references to removed records: field and target.
    public var references: [(field: String, target: String)]
    /// Its parent (kept by the rewrite).
    public var parent: String?

    public init(name: String, recordType: String, fields: String, created: Stamp, references: [(field: String, target: String)], parent: String? = nil) {
        self.name = name
        self.recordType = recordType
        self.fields = fields
        self.created = created
        self.references = references
        self.parent = parent
    }
}

/// A record a query matched.
public struct QueryMatch: Sendable {
    /// The record.
    public var record: Record
    /// The engine's key of its zone (a continuation marker's tie-breaker).
    public var zoneKey: Int64
    /// Its values of the query's sort keys, in order.
    public var sortValues: [JSONValue]
    /// The truth of the query's ``FilterPlan/flagFilters`` for it (`nil` for unknown), in order.
    public var flags: [Bool?]

    /// A match's values.
    public init(record: Record, zoneKey: Int64, sortValues: [JSONValue], flags: [Bool?] = []) {
        self.record = record
        self.zoneKey = zoneKey
        self.sortValues = sortValues
        self.flags = flags
    }
}

/// A record that holds a `VALIDATE` reference to one a delete operation removed.
public struct ValidatingBlocker: Sendable, Hashable {
    /// The delete operation (its index in the batch).
    public var operation: Int
    /// The record holding the `VALIDATE` reference.
    public var source: String
    /// The removed record it points at.
    public var target: String

    /// A blocker's values.
    public init(operation: Int, source: String, target: String) {
        self.operation = operation
        self.source = source
        self.target = target
    }
}

/// A bearer token as stored (its hash, never the token itself, stays inside the engine).
public struct StoredToken: Sendable, Hashable {
    /// The name the operator gave it (one per device), unique among its user's tokens.
    public var name: String
    /// When it was issued, in milliseconds since 1970.
    public var createdAt: Int64
    /// When it stops working, in milliseconds since 1970; `nil`: never.
    public var expiresAt: Int64?

    /// A stored token's values.
    public init(name: String, createdAt: Int64, expiresAt: Int64?) {
        self.name = name
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// An identity a user signs in with: an identity provider's issuer and subject (an ID token's
/// `iss` and `sub`), and what the provider said of it when it was first seen.
public struct StoredIdentity: Sendable, Hashable {
    /// The provider's issuer (`https://appleid.apple.com`).
    public var issuer: String
    /// The provider's identifier of the person, unique and never reused within the issuer.
    public var subject: String
    /// The operator's name for the provider.
    public var provider: String
    /// The email address the provider gave, if any.
    public var email: String?
    /// Whether the provider said it verified ``email``.
    public var emailVerified: Bool
    /// When it was first seen, in milliseconds since 1970.
    public var createdAt: Int64

    /// A stored identity's values.
    public init(issuer: String, subject: String, provider: String, email: String?, emailVerified: Bool, createdAt: Int64) {
        self.issuer = issuer
        self.subject = subject
        self.provider = provider
        self.email = email
        self.emailVerified = emailVerified
        self.createdAt = createdAt
    }
}

/// A built-in account: a user's verified email address and the hash of their password.
public struct StoredAccount: Sendable, Hashable {
    /// The address, lower-cased.
    public var email: String
    /// `scrypt$N$r$p$SALT$KEY` (base64).
    public var passwordHash: String
    /// When the account was made, in milliseconds since 1970.
    public var createdAt: Int64
    /// When the password was last set, in milliseconds since 1970.
    public var passwordChangedAt: Int64

    public init(email: String, passwordHash: String, createdAt: Int64, passwordChangedAt: Int64) {
        self.email = email
        self.passwordHash = passwordHash
        self.createdAt = createdAt
        self.passwordChangedAt = passwordChangedAt
    }
}

/// A single-use code (kept by the SHA-256 of its value): a sign-up's verification code, a
/// password reset's, or an invitation.
public struct StoredAccountCode: Sendable, Hashable {
    /// The SHA-256 of the code.
    public var hash: Data
    /// `signup`, `reset` or `invitation`.
    public var kind: String
    /// The address it was mailed to, or (an invitation) the only one it admits; `nil`: any.
    public var email: String?
    /// A sign-up's chosen password, hashed.
    public var passwordHash: String?
    /// The SHA-256 of the invitation a sign-up gave.
    public var invitation: Data?
    /// In milliseconds since 1970.
    public var createdAt: Int64
    public var expiresAt: Int64

    public init(hash: Data, kind: String, email: String?, passwordHash: String? = nil, invitation: Data? = nil, createdAt: Int64, expiresAt: Int64) {
        self.hash = hash
        self.kind = kind
        self.email = email
        self.passwordHash = passwordHash
        self.invitation = invitation
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// A named operator as stored (its secret only as a SHA-256).
/// A node's requests to one route in one minute (docs/console.md, "Health").
public struct StoredMetricMinute: Sendable, Hashable {
    public var node: String
    /// Minutes since 1970.
    public var minute: Int64
    public var endpoint: String
    public var requests: Int64
    /// How many answers carried each error code.
    public var errors: [String: Int64]
    /// How many took each bucket of ``LatencyBuckets/bounds`` (one more: the slower ones).
    public var latency: [Int64]

    public init(node: String, minute: Int64, endpoint: String, requests: Int64, errors: [String: Int64], latency: [Int64]) {
        self.node = node
        self.minute = minute
        self.endpoint = endpoint
        self.requests = requests
        self.errors = errors
        self.latency = latency
    }
}

/// The buckets of the charts' latency histograms: upper bounds in microseconds, doubling from
/// 250 µs to about 4 s; a last bucket holds what is slower.
public enum LatencyBuckets {
    public static let bounds: [Int64] = (0..<15).map { 250 << $0 }

    /// The bucket of `micros`.
    public static func bucket(_ micros: Int64) -> Int {
        bounds.firstIndex { micros <= $0 } ?? bounds.count
    }

    /// The upper bound of the bucket where `fraction` of `counts` is reached (the last bound
    /// doubled for the slower ones), in microseconds; `nil` for no requests.
    public static func quantile(_ fraction: Double, of counts: [Int64]) -> Int64? {
        let total = counts.reduce(0, +)
        guard total > 0 else { return nil }
        let wanted = Int64((Double(total) * fraction).rounded(.up))
        var seen: Int64 = 0
        for (index, count) in counts.enumerated() {
            seen += count
            if seen >= wanted { return index < bounds.count ? bounds[index] : bounds[bounds.count - 1] * 2 }
        }
        return bounds[bounds.count - 1] * 2
    }
}

/// A request in the request log (docs/console.md, "The request log").
public struct StoredRequest: Sendable, Hashable, Codable {
    /// Its place in the log (0 until stored).
    public var id: Int64 = 0
    /// When it was answered, in milliseconds since 1970.
    public var at: Int64
    /// The node that answered it.
    public var node: String
    public var requestID: String
    public var method: String
    /// Without its query.
    public var path: String
    /// The route's pattern (`/database/1/{container}/{environment}/{database}/records/modify`).
    public var endpoint: String
    /// The user it was sent as (`""`: none, or a signed-out visitor).
    public var userRecordName: String
    public var userName: String
    /// The operator who sent it (acting as the user, or on the operators' API), or `""`.
    public var operatorName: String
    public var status: Int
    /// The error its answer carries (`CONFLICT`), or for a batch the errors of its records, or `""`.
    public var errorCode: String
    /// From the request's arrival to its answer's head.
    public var micros: Int64

    public init(id: Int64 = 0, at: Int64, node: String, requestID: String, method: String, path: String, endpoint: String, userRecordName: String,
                userName: String, operatorName: String, status: Int, errorCode: String, micros: Int64) {
        self.id = id
        self.at = at
        self.node = node
        self.requestID = requestID
        self.method = method
        self.path = path
        self.endpoint = endpoint
        self.userRecordName = userRecordName
        self.userName = userName
        self.operatorName = operatorName
        self.status = status
        self.errorCode = errorCode
        self.micros = micros
    }
}

/// Which requests of the log to read: each condition given must hold.
public struct RequestLogFilter: Sendable, Hashable {
    /// A user's name or record name.
    public var user: String?
    /// A substring of the path.
    public var path: String?
    /// The status, or its class (`4` for 4xx).
    public var status: Int?
    /// An error code the answer carries.
    public var errorCode: String?
    /// Only requests before this one in the log (paging back).
    public var before: Int64?
    public var limit: Int

    public init(user: String? = nil, path: String? = nil, status: Int? = nil, errorCode: String? = nil, before: Int64? = nil, limit: Int = 100) {
        self.user = user
        self.path = path
        self.status = status
        self.errorCode = errorCode
        self.before = before
        self.limit = limit
    }
}

/// A web console's session (docs/console.md, "Signing in").
public struct StoredConsoleSession: Sendable, Hashable {
    /// The SHA-256 of the session's cookie.
    public var tokenHash: Data
    public var operatorName: String
    /// In milliseconds since 1970, as the next three.
    public var createdAt: Int64
    /// When a request last used it.
    public var seenAt: Int64
    /// When it ends however it is used.
    public var expiresAt: Int64

    public init(tokenHash: Data, operatorName: String, createdAt: Int64, seenAt: Int64, expiresAt: Int64) {
        self.tokenHash = tokenHash
        self.operatorName = operatorName
        self.createdAt = createdAt
        self.seenAt = seenAt
        self.expiresAt = expiresAt
    }
}

public struct StoredOperator: Sendable, Hashable {
    public var name: String
    public var secretHash: Data
    /// `read`, `write`, `schema`, `users`, `all`.
    public var scopes: [String]
    /// In milliseconds since 1970.
    public var createdAt: Int64

    public init(name: String, secretHash: Data, scopes: [String], createdAt: Int64) {
        self.name = name
        self.secretHash = secretHash
        self.scopes = scopes
        self.createdAt = createdAt
    }
}

/// An entry of the operators' audit log.
public struct AuditEntry: Sendable, Hashable {
    /// The operator's name.
    public var operatorName: String
    /// In milliseconds since 1970.
    public var at: Int64
    /// What was done (`POST /database/1/…/records/modify`).
    public var action: String
    /// On what or whom (`as alice`, a user's name).
    public var target: String

    public init(operatorName: String, at: Int64, action: String, target: String) {
        self.operatorName = operatorName
        self.at = at
        self.action = action
        self.target = target
    }
}

/// An API token as stored (its value is kept only as a SHA-256): what lets a web app's
/// signed-out visitors read a container's public database, and which web origins may use it.
public struct StoredAPIToken: Sendable, Hashable {
    /// The SHA-256 of its value.
    public var hash: Data
    /// The name the operator gave it, unique in its container and environment.
    public var name: String
    /// The container it is for.
    public var container: String
    /// `development` or `production`.
    public var environment: String
    /// The web origins (`https://example.com`) whose pages may use it; `*` stands for any.
    public var origins: [String]
    /// When it was issued, in milliseconds since 1970.
    public var createdAt: Int64
    /// Where the web sign-in page sends a user who signed in, with their token (CloudKit's
    /// URL Redirect); `nil`: the page posts the token to the app's window (Post Message).
    public var signInCallback: String?

    /// A stored API token's values.
    public init(hash: Data, name: String, container: String, environment: String, origins: [String], createdAt: Int64,
                signInCallback: String? = nil) {
        self.hash = hash
        self.name = name
        self.container = container
        self.environment = environment
        self.origins = origins
        self.createdAt = createdAt
        self.signInCallback = signInCallback
    }

    /// Whether a page of `origin` (the `Origin` header, as the browser sends it) may use it.
    public func allows(origin: String) -> Bool {
        origins.contains("*") || origins.contains(origin.lowercased())
    }

    /// The origins as one column's text: space-separated (an origin holds no space).
    public var originsText: String { origins.joined(separator: " ") }

    /// The origins of a column's text.
    public static func origins(fromText text: String) -> [String] {
        text.split(separator: " ").map(String.init)
    }
}

/// A sign-in through an identity provider under way on the web sign-in page: stored under the
/// SHA-256 of its `state` when the browser leaves for the provider, taken (once) when it comes
/// back.
public struct StoredSignInFlow: Sendable, Hashable {
    /// The SHA-256 of the `state` sent to the provider.
    public var stateHash: Data
    public var container: String
    public var environment: String
    /// The name of the API token whose app the token goes to.
    public var apiToken: String
    /// The app's origin the page posts the token to (Post Message), if the page was given one.
    public var origin: String?
    /// The identity provider's name.
    public var provider: String
    /// The nonce the ID token must carry.
    public var nonce: String
    /// The PKCE code verifier sent with the code.
    public var verifier: String
    /// The SHA-256 of the browser's sign-in cookie: only the browser that began the sign-in
    /// may finish it.
    public var browserHash: Data
    /// When it began, in milliseconds since 1970.
    public var createdAt: Int64

    public init(stateHash: Data, container: String, environment: String, apiToken: String, origin: String?, provider: String,
                nonce: String, verifier: String, browserHash: Data, createdAt: Int64) {
        self.stateHash = stateHash
        self.container = container
        self.environment = environment
        self.apiToken = apiToken
        self.origin = origin
        self.provider = provider
        self.nonce = nonce
        self.verifier = verifier
        self.browserHash = browserHash
        self.createdAt = createdAt
    }
}

/// A server-to-server key as stored: the public half of a key pair whose private half signs
/// requests (`X-Apple-CloudKit-Request-SignatureV1`).
public struct StoredServerKey: Sendable, Hashable {
    /// The key's ID (`X-Apple-CloudKit-Request-KeyID`): the SHA-256 of its public key, in hex.
    public var id: String
    /// The name the operator gave it, unique among its user's keys.
    public var name: String
    /// The P-256 public key, in its X9.63 form.
    public var publicKey: Data
    /// When it was registered, in milliseconds since 1970.
    public var createdAt: Int64

    /// A stored key's values.
    public init(id: String, name: String, publicKey: Data, createdAt: Int64) {
        self.id = id
        self.name = name
        self.publicKey = publicKey
        self.createdAt = createdAt
    }
}

/// A field the records' indexes cover: its name and the type its values are compared as.
public struct FieldIndexKey: Sendable, Hashable {
    public var field: String
    public var scalar: ScalarType

    public init(field: String, scalar: ScalarType) {
        self.field = field
        self.scalar = scalar
    }
}
