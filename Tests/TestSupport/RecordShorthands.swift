import RecordModel

/// Shorthands for building test records.
extension Record {
    public static func artist(_ name: String, _ displayName: String? = nil) -> Record {
        Record(recordName: name, recordType: "Artist", fields: ["name": .string(displayName ?? name)])
    }

    public static func artwork(_ name: String, by artist: String, action: Reference.Action = .deleteSelf, year: Int64 = 1900) -> Record {
        Record(recordName: name, recordType: "Artwork", fields: [
            "title": .string(name), "year": .int64(year),
            "artist": .reference(Reference(recordName: artist, action: action)),
        ])
    }
}
