/// What a user's records hold: how many they created, and their bytes.
public struct Usage: Sendable, Equatable, CustomStringConvertible {
    /// Records the user created, in every container and database.
    public var records: Int64
    /// Those records' bytes: each one's stored fields (UTF-8 JSON) plus the uploaded assets it
    /// holds (the rules' `Quota.assetBytes(of:)`).
    public var bytes: Int64

    public init(records: Int64, bytes: Int64) {
        self.records = records
        self.bytes = bytes
    }

    public static let zero = Usage(records: 0, bytes: 0)

    public var description: String { "\(records) records, \(bytes) bytes" }
}
