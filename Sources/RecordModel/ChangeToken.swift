import Foundation

/// A zone change token: where a reader of a zone's change feed has got to.
///
/// Opaque on the wire (base64url). It names the zone incarnation it belongs to, so a token
/// from a zone that was deleted and recreated, or from another zone, is recognised rather
/// than misread; a checksum tells a genuine token from garbage.
public struct ZoneChangeToken: Sendable, Hashable {
    /// The identity of the zone incarnation the token belongs to.
    public var zoneUID: UUID
    /// Every change with a sequence number up to this one has been delivered.
    public var sequence: Int64
    /// Tombstones at or below this sequence are not delivered: they were already deleted
    /// when the reader's first fetch began, so the reader never saw those records.
    public var tombstoneFloor: Int64
    /// For a participant of record shares: a digest of the shares it reached when the token was
    /// issued (0 for everyone else); a token read with other shares is expired.
    public var reach: Int64

    /// Creates a token.
    public init(zoneUID: UUID, sequence: Int64, tombstoneFloor: Int64, reach: Int64 = 0) {
        self.zoneUID = zoneUID
        self.sequence = sequence
        self.tombstoneFloor = tombstoneFloor
        self.reach = reach
    }

    /// The wire string.
    public var string: String {
        OpaqueCoding.encode(kind: 0x5A, uid: zoneUID, numbers: reach == 0 ? [sequence, tombstoneFloor] : [sequence, tombstoneFloor, reach])
    }

    /// Reads a wire string.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` when the string is not a
    ///   zone change token.
    public init(string: String) throws {
        guard let (uid, numbers) = OpaqueCoding.decode(string, kind: 0x5A, count: 2) ?? OpaqueCoding.decode(string, kind: 0x5A, count: 3), numbers[0] >= 0 else {
            throw RecordSyncError(.badRequest, "syncToken is not a zone change token issued by this server")
        }
        self.init(zoneUID: uid, sequence: numbers[0], tombstoneFloor: numbers[1], reach: numbers.count > 2 ? numbers[2] : 0)
    }
}

/// A database change token: where a reader of a database's zone-change feed has got to.
public struct DatabaseChangeToken: Sendable, Hashable {
    /// The identity of the database the token belongs to.
    public var databaseUID: UUID
    /// Every zone change up to this sequence has been delivered.
    public var sequence: Int64
    /// Zones deleted at or below this sequence are not reported (see ``ZoneChangeToken/tombstoneFloor``).
    public var deletionFloor: Int64

    /// Creates a token.
    public init(databaseUID: UUID, sequence: Int64, deletionFloor: Int64) {
        self.databaseUID = databaseUID
        self.sequence = sequence
        self.deletionFloor = deletionFloor
    }

    /// The wire string.
    public var string: String { OpaqueCoding.encode(kind: 0x44, uid: databaseUID, numbers: [sequence, deletionFloor]) }

    /// Reads a wire string.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` when the string is not a
    ///   database change token.
    public init(string: String) throws {
        guard let (uid, numbers) = OpaqueCoding.decode(string, kind: 0x44, count: 2), numbers[0] >= 0 else {
            throw RecordSyncError(.badRequest, "syncToken is not a database change token issued by this server")
        }
        self.init(databaseUID: uid, sequence: numbers[0], deletionFloor: numbers[1])
    }
}

/// The binary layout behind tokens: kind byte, version, a UUID, big-endian 64-bit numbers,
/// and an FNV-1a checksum, in unpadded base64url.
enum OpaqueCoding {
    static let version: UInt8 = 1

    static func encode(kind: UInt8, uid: UUID, numbers: [Int64]) -> String {
        var bytes: [UInt8] = [kind, version]
        withUnsafeBytes(of: uid.uuid) { bytes.append(contentsOf: $0) }
        for number in numbers { withUnsafeBytes(of: number.bigEndian) { bytes.append(contentsOf: $0) } }
        withUnsafeBytes(of: checksum(bytes).bigEndian) { bytes.append(contentsOf: $0) }
        return Base64URL.encode(Data(bytes))
    }

    static func decode(_ string: String, kind: UInt8, count: Int) -> (UUID, [Int64])? {
        let expected = 2 + 16 + 8 * count + 4
        guard string.utf8.count <= 4 * expected, let data = Base64URL.decode(string), data.count == expected,
              Base64URL.encode(data) == string else { return nil }
        let bytes = [UInt8](data)
        guard bytes[0] == kind, bytes[1] == version else { return nil }
        let body = Array(bytes[0..<(expected - 4)])
        let stored = bytes[(expected - 4)...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard stored == checksum(body) else { return nil }
        let u = Array(bytes[2..<18])
        let uid = UUID(uuid: (u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]))
        let numbers = (0..<count).map { i in
            bytes[(18 + 8 * i)..<(26 + 8 * i)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }.map { Int64(bitPattern: $0) }
        return (uid, numbers)
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in bytes {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return hash
    }
}

/// Unpadded base64url (RFC 4648 §5), the alphabet of every opaque string the server issues.
///
/// Written out byte by byte: the server encodes a change token for every page it answers and
/// decodes the one it is given, and Foundation's base64 plus three `replacingOccurrences` took a
/// fifth of a change page's read.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// Each byte's value in the alphabet, or 0xFF.
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { values[Int(byte)] = UInt8(value) }
        return values
    }()

    /// Encodes bytes.
    public static func encode(_ data: Data) -> String {
        let alphabet = alphabet
        return data.withUnsafeBytes { (input: UnsafeRawBufferPointer) -> String in
            let count = input.count
            let length = count / 3 * 4 + [0, 2, 3][count % 3]
            return String(unsafeUninitializedCapacity: length) { output in
                var out = 0
                var index = 0
                func emit(_ sextet: UInt32) {
                    output[out] = alphabet[Int(sextet & 0x3F)]
                    out += 1
                }
                while index + 3 <= count {
                    let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                    emit(chunk >> 18); emit(chunk >> 12); emit(chunk >> 6); emit(chunk)
                    index += 3
                }
                switch count - index {
                case 1:
                    let chunk = UInt32(input[index]) << 16
                    emit(chunk >> 18); emit(chunk >> 12)
                case 2:
                    let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
                    emit(chunk >> 18); emit(chunk >> 12); emit(chunk >> 6)
                default:
                    break
                }
                return out
            }
        }
    }

    /// Decodes a string; `nil` when it is not unpadded base64url (a character outside the
    /// alphabet, padding, or a length no encoding has). Padding was accepted before this
    /// decoder; the server never issues it. Bits past the last whole byte are ignored (change
    /// tokens are checked by encoding them again).
    public static func decode(_ string: String) -> Data? {
        let values = values
        var text = string
        return text.withUTF8 { input -> Data? in
            let count = input.count
            guard count % 4 != 1 else { return nil }
            var bytes = [UInt8]()
            bytes.reserveCapacity(count * 3 / 4)
            var accumulator: UInt32 = 0
            var bits = 0
            for byte in input {
                let value = values[Int(byte)]
                guard value != 0xFF else { return nil }
                accumulator = accumulator << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                }
            }
            return Data(bytes)
        }
    }
}
