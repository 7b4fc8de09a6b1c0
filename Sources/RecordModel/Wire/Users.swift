import Foundation

/// The answer to `users/current`: `{userRecordName, firstName, lastName}` (names only for a
/// discoverable user; `null` otherwise).
public struct UserIdentity: Sendable, Hashable, Codable {
    /// The user's record name, as it appears in `created` and `modified`.
    public var userRecordName: String
    public var firstName: String?
    public var lastName: String?
    /// In the answer to `users/lookup/email`.
    public var emailAddress: String?
    /// Extension: the name the user was created with (`recordserver user add NAME`), in the
    /// answer to `users/current`.
    public var userName: String?

    public init(userRecordName: String, firstName: String? = nil, lastName: String? = nil, emailAddress: String? = nil, userName: String? = nil) {
        self.userRecordName = userRecordName
        self.firstName = firstName
        self.lastName = lastName
        self.emailAddress = emailAddress
        self.userName = userName
    }

    enum CodingKeys: String, CodingKey { case userRecordName, firstName, lastName, emailAddress, userName }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userRecordName, forKey: .userRecordName)
        // Apple's user dictionary writes a missing name as null.
        try container.encode(firstName, forKey: .firstName)
        try container.encode(lastName, forKey: .lastName)
        try container.encodeIfPresent(emailAddress, forKey: .emailAddress)
        try container.encodeIfPresent(userName, forKey: .userName)
    }
}

/// What identifies a user to look up: Apple's Lookup Info dictionary.
public struct UserLookupInfo: Sendable, Hashable, Codable {
    public var emailAddress: String?
    /// Accepted and never matched: RecordSync stores no phone numbers.
    public var phoneNumber: String?
    public var userRecordName: String?

    public init(emailAddress: String? = nil, phoneNumber: String? = nil, userRecordName: String? = nil) {
        self.emailAddress = emailAddress
        self.phoneNumber = phoneNumber
        self.userRecordName = userRecordName
    }
}

/// The parts of a user's name (Apple's Name Components dictionary); RecordSync keeps the given
/// and family names.
public struct UserNameComponents: Sendable, Hashable, Codable {
    public var namePrefix: String?
    public var givenName: String?
    public var middleName: String?
    public var familyName: String?
    public var nameSuffix: String?
    public var nickname: String?

    public init(givenName: String? = nil, familyName: String? = nil) {
        self.givenName = givenName
        self.familyName = familyName
    }
}

/// A user as `users/caller` and `users/discover` describe one (Apple's User Identity dictionary).
public struct UserIdentityInfo: Sendable, Hashable, Codable {
    public var userRecordName: String
    public var lookupInfo: UserLookupInfo?
    public var nameComponents: UserNameComponents?

    public init(userRecordName: String, lookupInfo: UserLookupInfo? = nil, nameComponents: UserNameComponents? = nil) {
        self.userRecordName = userRecordName
        self.lookupInfo = lookupInfo
        self.nameComponents = nameComponents
    }
}

/// The answer to `users/caller` and `users/discover`.
public struct UserIdentitiesResponse: Sendable, Hashable, Codable {
    public var users: [UserIdentityInfo]
    public init(users: [UserIdentityInfo]) { self.users = users }
}

/// The answer to `users/caller` and `users/current`: the caller's User Identity dictionary
/// at the top level (CloudKit JS hands this body to the app as the identity), the User
/// dictionary's `firstName` and `lastName` (`null` when missing) beside it, and `users`
/// holding the identity again (the form of Apple's archived reference, which other clients
/// read).
public struct CallerIdentityResponse: Sendable, Hashable, Codable {
    public var userRecordName: String
    public var lookupInfo: UserLookupInfo?
    public var nameComponents: UserNameComponents?
    public var firstName: String?
    public var lastName: String?
    /// Extension: the name the user was created with (`recordserver user add NAME`).
    public var userName: String?
    public var users: [UserIdentityInfo]

    /// The answer for a caller with this identity and User dictionary.
    public init(identity: UserIdentityInfo, user: UserIdentity) {
        userRecordName = identity.userRecordName
        lookupInfo = identity.lookupInfo
        nameComponents = identity.nameComponents
        firstName = user.firstName
        lastName = user.lastName
        userName = user.userName
        users = [identity]
    }

    enum CodingKeys: String, CodingKey { case userRecordName, lookupInfo, nameComponents, firstName, lastName, userName, users }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userRecordName, forKey: .userRecordName)
        try container.encodeIfPresent(lookupInfo, forKey: .lookupInfo)
        try container.encodeIfPresent(nameComponents, forKey: .nameComponents)
        // Apple's user dictionary writes a missing name as null.
        try container.encode(firstName, forKey: .firstName)
        try container.encode(lastName, forKey: .lastName)
        try container.encodeIfPresent(userName, forKey: .userName)
        try container.encode(users, forKey: .users)
    }
}

/// The body of `POST users/discover`.
public struct DiscoverUsersRequest: Sendable, Hashable, Codable {
    public var lookupInfos: [UserLookupInfo]
    public init(lookupInfos: [UserLookupInfo]) { self.lookupInfos = lookupInfos }
}

/// The body of `users/lookup/email` and `users/lookup/id`.
public struct LookupUsersRequest: Sendable, Hashable, Codable {
    public var users: [UserLookupInfo]
    public init(users: [UserLookupInfo]) { self.users = users }
}

/// The answer to `users/lookup/email` and `users/lookup/id`: Apple's User dictionaries.
public struct UsersResponse: Sendable, Hashable, Codable {
    public var users: [UserIdentity]
    public init(users: [UserIdentity]) { self.users = users }
}

/// Extension: the body of `users/discoverability`, by which users make themselves discoverable
/// (or not) to `users/discover` and `users/lookup/*`.
public struct UserDiscoverabilityRequest: Sendable, Hashable, Codable {
    public var discoverable: Bool
    public init(discoverable: Bool) { self.discoverable = discoverable }
}
