import Foundation

// Saving and fetching an app's own `Codable` types as records.

extension Record {
    /// Creates a record of type `recordType` named by `recordID` whose fields are `value`'s
    /// properties, as ``RecordEncoder`` encodes them.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` and a reason naming the
    ///   property, for a value that cannot be a field.
    public init<T: Encodable>(encoding value: T, recordType: String, recordID: RecordID) throws {
        self = try RecordEncoder().encode(value, recordType: recordType, recordID: recordID)
    }

    /// Decodes a value of `type` from the record's fields, as ``RecordDecoder`` does.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` and a reason naming
    ///   the field that is missing or does not fit.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try RecordDecoder().decode(type, from: self)
    }
}
