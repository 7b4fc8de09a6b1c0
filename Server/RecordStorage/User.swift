import Foundation

/// A signed-in user, or ``visitor`` (a request with an API token alone).
public struct User: Sendable, Hashable {
    /// The storage key of the user.
    public var id: Int64
    /// The name given to `recordserver user add`.
    public var name: String
    /// The user's record name (`_` and 32 hex digits), as it appears in `created`/`modified`.
    public var userRecordName: String

    /// Creates a user value.
    public init(id: Int64, name: String, userRecordName: String) {
        self.id = id
        self.name = name
        self.userRecordName = userRecordName
    }

    /// A signed-out visitor (a request with an API token and no user), who reads public
    /// databases only. Its key is never a stored user's (those begin at 1) and its record name
    /// never one (those are `_` and 32 hex digits).
    public static let visitor = User(id: 0, name: "", userRecordName: "_visitor")
}

/// Which of a container's databases a request addresses.
public enum DatabaseKind: String, Sendable, Hashable, CaseIterable {
    /// Readable by every signed-in user; records writable by their creator.
    case `public`
    /// One per user, theirs alone.
    case `private`
    /// One per user: the zones other users shared with them, each stored in its owner's
    /// private database.
    case shared
}
