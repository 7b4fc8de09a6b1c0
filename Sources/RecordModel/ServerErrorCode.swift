import Foundation

/// A `serverErrorCode`: the stable string that names what went wrong.
///
/// A struct rather than an enum so that new codes never break callers' `switch` statements.
public struct ServerErrorCode: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let accessDenied = Self(rawValue: "ACCESS_DENIED")
    public static let atomicError = Self(rawValue: "ATOMIC_ERROR")
    public static let authenticationFailed = Self(rawValue: "AUTHENTICATION_FAILED")
    public static let authenticationRequired = Self(rawValue: "AUTHENTICATION_REQUIRED")
    public static let badRequest = Self(rawValue: "BAD_REQUEST")
    public static let conflict = Self(rawValue: "CONFLICT")
    public static let exists = Self(rawValue: "EXISTS")
    public static let internalError = Self(rawValue: "INTERNAL_ERROR")
    public static let notFound = Self(rawValue: "NOT_FOUND")
    public static let quotaExceeded = Self(rawValue: "QUOTA_EXCEEDED")
    public static let throttled = Self(rawValue: "THROTTLED")
    public static let tryAgainLater = Self(rawValue: "TRY_AGAIN_LATER")
    public static let validatingReferenceError = Self(rawValue: "VALIDATING_REFERENCE_ERROR")
    public static let zoneNotFound = Self(rawValue: "ZONE_NOT_FOUND")
    /// Extension: a genuine change token that can no longer be used (its zone was deleted and
    /// recreated). Fetch the zone again from scratch.
    public static let changeTokenExpired = Self(rawValue: "CHANGE_TOKEN_EXPIRED")
    /// Extension: a request over a documented limit (operations per request, body size,
    /// record size).
    public static let limitExceeded = Self(rawValue: "LIMIT_EXCEEDED")
    /// Extension: what the server does not do yet (a record share).
    public static let notSupported = Self(rawValue: "NOT_SUPPORTED")
    /// Client-side: the server could not be reached or did not answer. Never sent by a server.
    public static let networkFailure = Self(rawValue: "NETWORK_FAILURE")

    /// The HTTP status a request-level error with this code is answered with: Apple's status
    /// for the code it travels as (``WireForm/error(_:)``).
    public var httpStatus: Int {
        WireForm.appleErrorCodes[WireForm.error(self).code] ?? 500
    }

    /// Whether retrying the same request later may succeed.
    public var isTransient: Bool {
        self == .throttled || self == .tryAgainLater || self == .internalError || self == .networkFailure
    }
}

/// The error type of RecordSync: a ``ServerErrorCode``, a human reason, and what it concerns.
///
/// It is what the server answers (as JSON, see ``ErrorBody``) and what the model's
/// validation throws.
public struct RecordSyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code.
    public var code: ServerErrorCode
    /// A human-readable reason that names the offending part of the request.
    public var reason: String
    /// The record the error concerns, if any.
    public var recordName: String?
    /// The zone the error concerns, if any.
    public var zoneID: ZoneID?
    /// Seconds to wait before retrying, for transient errors.
    public var retryAfter: Double?
    /// For ``ServerErrorCode/conflict`` (and `EXISTS`): the record as the server has it now.
    @OutOfLine public var serverRecord: Record?
    /// For ``ServerErrorCode/authenticationRequired``: the page that says how to sign in to this
    /// server (CloudKit JS opens it from its sign-in button).
    public var redirectURL: String?
    /// For a conflict seen by a client: the record the client tried to save. Not on the wire.
    @OutOfLine public var clientRecord: Record?
    /// For a conflict seen by a client: the server's version the client's edit started from,
    /// when known. Not on the wire.
    @OutOfLine public var ancestorRecord: Record?

    /// Creates an error.
    public init(
        _ code: ServerErrorCode, _ reason: String, recordName: String? = nil, zoneID: ZoneID? = nil,
        retryAfter: Double? = nil, serverRecord: Record? = nil, redirectURL: String? = nil
    ) {
        self.code = code
        self.redirectURL = redirectURL
        self.reason = reason
        self.recordName = recordName
        self.zoneID = zoneID
        self.retryAfter = retryAfter
        self.serverRecord = serverRecord
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}

/// The wire form of an error, top-level or per record:
/// `{recordName?, zoneID?, reason, serverErrorCode, recordSyncErrorCode?, extensionErrorCode?, retryAfter?, uuid,
/// serverRecord?, redirectURL?}`.
public struct ErrorBody: Sendable, Hashable, Codable {
    public var recordName: String?
    public var zoneID: ZoneID?
    public var reason: String
    /// The Apple code the error travels as (``WireForm/error(_:)``).
    public var serverErrorCode: ServerErrorCode
    /// Extension: RecordSync's own code, when it says more than ``serverErrorCode``.
    public var recordSyncErrorCode: ServerErrorCode?
    /// The same code again under the key CloudKit JS keeps on its error object (`CKError`'s
    /// `extensionErrorCode`, with `isServerExtensionError` true), so a web app can read it.
    public var extensionErrorCode: ServerErrorCode?
    public var retryAfter: Double?
    public var uuid: String
    /// Extension: for `CONFLICT`, the server's current record.
    public var serverRecord: Record?
    /// The subscription an error of `subscriptions/*` concerns.
    public var subscriptionID: String?
    /// For `AUTHENTICATION_REQUIRED`: where a person signs in.
    public var redirectURL: String?

    /// The wire form of `error`, with a fresh `uuid`.
    public init(_ error: RecordSyncError) {
        recordName = error.recordName
        zoneID = error.zoneID
        reason = error.reason
        (serverErrorCode, recordSyncErrorCode) = WireForm.error(error.code)
        extensionErrorCode = recordSyncErrorCode
        redirectURL = error.redirectURL
        retryAfter = error.retryAfter
        uuid = UUID().uuidString
        serverRecord = error.serverRecord
    }

    /// The error this body describes.
    public var error: RecordSyncError {
        RecordSyncError(WireForm.error(code: serverErrorCode, extensionCode: recordSyncErrorCode ?? extensionErrorCode), reason, recordName: recordName, zoneID: zoneID,
                        retryAfter: retryAfter, serverRecord: serverRecord, redirectURL: redirectURL)
    }
}
