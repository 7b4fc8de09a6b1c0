import Foundation

/// Identifies a record zone: its name and, optionally, the user that owns it.
///
/// On the wire this is `{"zoneName": "…", "ownerRecordName": "…"}`; an omitted `zoneID`
/// means ``ZoneID/defaultZone``.
public struct ZoneID: Sendable, Hashable {
    /// The zone's name, unique within its database.
    public var zoneName: String
    /// The user record name of the zone's owner, when known.
    public var ownerRecordName: String?

    /// The name of the zone every database has.
    public static let defaultZoneName = "_defaultZone"
    /// The zone every database has.
    public static let defaultZone = ZoneID(zoneName: defaultZoneName)

    /// Creates a zone identifier.
    public init(zoneName: String, ownerRecordName: String? = nil) {
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
    }
}

/// Identifies a record: its name within a zone.
public struct RecordID: Sendable, Hashable, Codable {
    /// The record's name, unique within its zone.
    public var recordName: String
    /// The zone holding the record.
    public var zoneID: ZoneID

    /// Creates a record identifier.
    public init(recordName: String, zoneID: ZoneID = .defaultZone) {
        self.recordName = recordName
        self.zoneID = zoneID
    }
}

/// Limits on names, shared by the server's validation and the client's.
public enum NameRules {
    /// The longest record name, record type, field name or zone name, in UTF-8 bytes.
    public static let maximumLength = 255

    /// Checks a record name, zone name or record type: non-empty, at most
    /// ``maximumLength`` bytes, no control characters.
    ///
    /// - Returns: `nil` when valid, else the reason it is not.
    public static func problem(withName name: String, kind: String) -> String? {
        if name.isEmpty { return "\(kind) is empty" }
        if name.utf8.count > maximumLength {
            return "\(kind) is \(name.utf8.count) bytes long; the limit is \(maximumLength)"
        }
        if containsControlCharacter(name) {
            return "\(kind) contains a control character"
        }
        return nil
    }

    /// Whether `name` holds a character of Unicode's control category (Cc): C0, DEL and C1.
    /// ASCII text, the common case, is checked byte by byte.
    static func containsControlCharacter(_ name: String) -> Bool {
        var ascii = true
        for byte in name.utf8 {
            if byte < 0x20 || byte == 0x7F { return true }
            if byte >= 0x80 { ascii = false; break }
        }
        if ascii { return false }
        return name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Checks a field name: a letter, then letters, digits or underscores, at most
    /// ``maximumLength`` bytes (CloudKit's rule).
    ///
    /// - Returns: `nil` when valid, else the reason it is not.
    public static func problem(withFieldName name: String) -> String? {
        guard let first = name.unicodeScalars.first else { return "field name is empty" }
        if name.utf8.count > maximumLength {
            return "field name is \(name.utf8.count) bytes long; the limit is \(maximumLength)"
        }
        func isASCIILetter(_ s: Unicode.Scalar) -> Bool {
            (s >= "a" && s <= "z") || (s >= "A" && s <= "Z")
        }
        guard isASCIILetter(first) else {
            return "field name \(quoted(name)) must start with a letter"
        }
        for scalar in name.unicodeScalars
        where !(isASCIILetter(scalar) || (scalar >= "0" && scalar <= "9") || scalar == "_") {
            return "field name \(quoted(name)) may hold only letters, digits and underscores"
        }
        return nil
    }

    /// A name quoted for an error reason, shortened when long.
    public static func quoted(_ name: String) -> String {
        let shown = name.count > 64 ? String(name.prefix(61)) + "..." : name
        return "'\(shown)'"
    }
}
