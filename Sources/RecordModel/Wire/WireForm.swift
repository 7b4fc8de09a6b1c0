import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How RecordSync's codes and field types travel on the wire.
///
/// Every `serverErrorCode` a server sends is one Apple documents, and every field `type` is one
/// of Apple's types (or its `_LIST` form), so a client built on Apple's documents reads every
/// answer. Where RecordSync means more than Apple's word says, the finer meaning travels in an
/// extension key beside it: ``errorExtensionKey`` beside `serverErrorCode`, ``typeExtensionKey``
/// beside a field's `type`. RecordSync's readers take the extension key when they know its value
/// and Apple's word otherwise. These two functions are the only place the mapping is written.
public enum WireForm {
    /// The key beside `serverErrorCode` naming RecordSync's finer code (`LIMIT_EXCEEDED`, …).
    public static let errorExtensionKey = "recordSyncErrorCode"
    /// The key beside a field's `type` naming RecordSync's finer type (`BOOLEAN`, …).
    public static let typeExtensionKey = "recordSyncType"
    /// The key beside a reference's `action` naming RecordSync's finer action (`NULLIFY`).
    public static let actionExtensionKey = "recordSyncAction"

    /// A reference action as it travels: Apple's word (`NULLIFY` as `NONE`, which is what an
    /// Apple-only client can do with it: nothing), and RecordSync's beside it when finer.
    public static func wire(_ action: Reference.Action) -> (action: String, extension: String?) {
        action == .nullify ? (Reference.Action.none.rawValue, action.rawValue) : (action.rawValue, nil)
    }

    /// The action a reference read from the wire means: its extension when RecordSync knows it,
    /// else Apple's word (absent: `NONE`); `nil` for a word no one knows.
    public static func referenceAction(_ wire: String?, extension finer: String?) -> Reference.Action? {
        if let finer, let known = Reference.Action(rawValue: finer) { return known }
        guard let wire else { return Reference.Action.none }
        return Reference.Action(rawValue: wire)
    }

    /// CloudKit JS's `numbersAsStrings` option for the answer being written: `INT64` and
    /// `DOUBLE` field values (and their lists' elements) are written as JSON strings, which
    /// JavaScript reads without losing precision. Timestamps stay numbers. Readers accept a
    /// string for an `INT64` or `DOUBLE` field either way.
    @TaskLocal public static var numbersAsStrings = false

    /// For the answer being written: the `downloadURL` of an asset RecordSync stores, which
    /// answers carry in place of its receipt. `nil` (the default, and whenever fields are
    /// written to be stored) writes assets as stored.
    @TaskLocal public static var assetLinks: AssetLinks?

    /// The error codes Apple documents for CloudKit Web Services, with their HTTP statuses.
    public static let appleErrorCodes: [ServerErrorCode: Int] = [
        .accessDenied: 403, .atomicError: 400, .authenticationFailed: 401, .authenticationRequired: 421,
        .badRequest: 400, .conflict: 409, .exists: 409, .internalError: 500, .notFound: 404,
        .quotaExceeded: 413, .throttled: 429, .tryAgainLater: 503, .validatingReferenceError: 412,
        .zoneNotFound: 404,
    ]

    /// The scalar types Apple documents.
    public static let appleScalarTypes: Set<ScalarType> = [.string, .int64, .double, .timestamp, .bytes, .reference, .location, .asset]

    /// The wire form of `code`: the Apple code sent as `serverErrorCode`, and RecordSync's own
    /// code for ``errorExtensionKey`` when it says more.
    public static func error(_ code: ServerErrorCode) -> (code: ServerErrorCode, extensionCode: ServerErrorCode?) {
        if appleErrorCodes[code] != nil { return (code, nil) }
        switch code {
        // A request, record or body over a limit, a token of a zone's earlier incarnation, a
        // database kind not supported: each a request the server will not take as it is.
        case .limitExceeded, .changeTokenExpired, .notSupported: return (.badRequest, code)
        // Never sent by a server (the client's own code for an unreachable server).
        case .networkFailure: return (.tryAgainLater, code)
        default: return (.internalError, code)
        }
    }

    /// The code an error body with `serverErrorCode` `code` and extension `extensionCode` means.
    public static func error(code: ServerErrorCode, extensionCode: ServerErrorCode?) -> ServerErrorCode {
        extensionCode ?? code
    }

    /// The wire form of `type`: the Apple type sent as `type`, and RecordSync's own type for
    /// ``typeExtensionKey`` when it says more. A `BOOLEAN` travels as `INT64` 0 or 1, as
    /// CloudKit stores booleans.
    public static func type(_ type: FieldType) -> (type: FieldType, extensionType: FieldType?) {
        // A switch, not a set lookup: every field written passes here.
        switch type.scalar {
        case .string, .int64, .double, .timestamp, .bytes, .reference, .location, .asset: return (type, nil)
        case .boolean: return (FieldType(.int64, isList: type.isList), type)
        case .nested: return (FieldType(.string, isList: type.isList), type)
        }
    }

    /// Whether a value a client typed as `given` is read as a field of type `declared`: the
    /// same type, or Apple's type that `declared` travels as (`INT64` 0 or 1 for a `BOOLEAN`,
    /// as a client knowing only Apple's types sends it back).
    public static func reads(_ given: FieldType, as declared: FieldType) -> Bool {
        given == declared || type(declared).type == given
    }

    /// Whether stored fields text (written by an earlier release) holds a field whose type the
    /// wire now carries in another form (`"type":"BOOLEAN"`), so that it must be decoded and
    /// written again rather than copied to an answer as it is. A string value holding those
    /// bytes only costs that decoding.
    public static func isBeforeWireForm(storedFields text: String) -> Bool {
        contains(#""type":"BOOLEAN"#, in: text)
    }

    /// Whether stored fields text holds an asset, which an answer carries with a download
    /// link (``assetLinks``) rather than as stored.
    public static func holdsAssets(storedFields text: String) -> Bool {
        contains(#""type":"ASSETID"#, in: text)
    }

    /// Whether stored fields text goes to an answer as it is: not when the answer writes
    /// numbers as strings (`numbersAsStrings`), nor when the text is of an earlier wire form
    /// (``isBeforeWireForm(storedFields:)``) or holds assets (``holdsAssets(storedFields:)``).
    public static func storedFieldsAnswerAsTheyAre(_ text: String, numbersAsStrings: Bool) -> Bool {
        !numbersAsStrings && !isBeforeWireForm(storedFields: text) && !holdsAssets(storedFields: text)
    }

    /// Whether `text` contains `string`, by the C library's `strstr` (vectorised; a change
    /// page asks this of every record's stored text). Stored fields text holds no NUL byte:
    /// JSON escapes it.
    private static func contains(_ string: String, in text: String) -> Bool {
        text.withCString { haystack in string.withCString { needle in strstr(haystack, needle) != nil } }
    }

    /// The type a field with wire `type` and extension `extensionType` (each parsed, `nil`
    /// when absent or unknown) is read as: the extension when RecordSync knows it.
    public static func type(type: FieldType?, extensionType: FieldType?) -> FieldType? {
        extensionType ?? type
    }
}

extension ServerErrorCode {
    /// Every code RecordSync uses (Apple's and its extensions), for checking their wire forms.
    public static let allKnown: [ServerErrorCode] = [
        .accessDenied, .atomicError, .authenticationFailed, .authenticationRequired, .badRequest, .conflict, .exists,
        .internalError, .notFound, .quotaExceeded, .throttled, .tryAgainLater, .validatingReferenceError, .zoneNotFound,
        .changeTokenExpired, .limitExceeded, .notSupported, .networkFailure,
    ]
}

/// How an answer gives each asset RecordSync stores its `downloadURL` (``WireForm/assetLinks``).
public struct AssetLinks: Sendable {
    /// The link of an asset, or `nil` to answer it as stored.
    public let link: @Sendable (StoredAsset) -> String?

    public init(_ link: @escaping @Sendable (StoredAsset) -> String?) {
        self.link = link
    }
}
