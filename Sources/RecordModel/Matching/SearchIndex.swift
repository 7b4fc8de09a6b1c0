import Foundation

/// What a record's fields add to the search tables, worked out in Swift when the record is
/// written, so that both storage engines and the client's cache index (and query) the same:
///
/// - the **text tokens** of each `STRING` and `STRING_LIST` field (``TextTokens``), for
///   `CONTAINS_ALL_TOKENS`, `CONTAINS_ANY_TOKENS` and `self CONTAINS`, for a record type that
///   is *searchable* (from its first word search on: ``QueryFilter/wordSearchTypes(_:recordType:schema:)``);
/// - each `LOCATION` field as a point on the unit sphere and a cell of a space-filling curve
///   (``GeoPoint``), for `NEAR` and sorting by distance, for every record type.
///
/// `NESTED` values (JSON in a string on the wire) and lists of locations are not indexed.
public struct SearchIndex: Sendable, Equatable {
    /// The distinct tokens of each text field.
    public private(set) var tokens: [(field: String, token: String)] = []
    /// The location fields.
    public private(set) var places: [(field: String, point: GeoPoint)] = []

    /// Whether the record adds no row.
    public var isEmpty: Bool { tokens.isEmpty && places.isEmpty }

    /// The index entries of `fields` (in no particular order); their words only if `words`
    /// (the record's type is searchable).
    public init(fields: some Sequence<(key: String, value: FieldValue)>, words: Bool = true) {
        for (field, value) in fields {
            switch value {
            case .string(let text):
                guard words else { continue }
                for token in TextTokens.tokens(of: text) { tokens.append((field, token)) }
            case .list(.string, let elements):
                guard words else { continue }
                var seen: [String] = []
                for case .string(let text) in elements {
                    for token in TextTokens.tokens(of: text) where !seen.contains(token) {
                        seen.append(token)
                        tokens.append((field, token))
                    }
                }
            case .location(let location):
                places.append((field, GeoPoint(location)))
            default:
                continue
            }
        }
    }

    /// Whether any of `fields` is indexed (a string, a list of strings or a location), without
    /// working the entries out.
    public static func indexes(_ fields: some Sequence<FieldValue>, words: Bool = true) -> Bool {
        fields.contains { value in
            switch value {
            case .string, .list(.string, _): words
            case .location: true
            default: false
            }
        }
    }

    /// The same rows, whatever their order.
    public static func == (lhs: SearchIndex, rhs: SearchIndex) -> Bool {
        guard lhs.tokens.count == rhs.tokens.count, lhs.places.count == rhs.places.count else { return false }
        let leftTokens = Set(lhs.tokens.map { "\($0.field)\u{0}\($0.token)" }), rightTokens = Set(rhs.tokens.map { "\($0.field)\u{0}\($0.token)" })
        guard leftTokens == rightTokens else { return false }
        let leftPlaces = Dictionary(lhs.places.map { ($0.field, $0.point) }, uniquingKeysWith: { a, _ in a })
        let rightPlaces = Dictionary(rhs.places.map { ($0.field, $0.point) }, uniquingKeysWith: { a, _ in a })
        return leftPlaces == rightPlaces
    }
}

/// How text is cut into the tokens full-text search compares.
///
/// Text is folded as the string options `[cd]` fold it (``StringOptions/fold(_:)``: full
/// Unicode case folding, marks removed, canonical composition), then cut into runs of letters,
/// marks and digits; everything else (spaces, punctuation, symbols) separates tokens. A token
/// longer than ``maximumLength`` code points keeps its first ``maximumLength``, the same when
/// a record is written and when a query is read, so a long word still finds itself. A text's
/// tokens are distinct and in first-appearance order. Scripts written without spaces (Chinese,
/// Japanese, Thai) are not segmented into words: a run of their letters is one token.
public enum TextTokens {
    /// The most code points of a token.
    public static let maximumLength = 100

    /// The distinct tokens of `text`.
    public static func tokens(of text: String) -> [String] {
        var result: [String] = []
        // Most texts have a few words: a set pays only for longer ones.
        var seen: Set<String> = []
        func add(_ token: String) {
            if result.count < 16 {
                if !result.contains(token) { result.append(token) }
                if result.count == 16 { seen = Set(result) }
            } else if seen.insert(token).inserted {
                result.append(token)
            }
        }
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            // ASCII folds to its lower case, and nothing else changes it.
            var current: [UInt8] = []
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    if current.count < maximumLength { current.append(byte) }
                case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                    if current.count < maximumLength { current.append(byte + 32) }
                default:
                    if !current.isEmpty { add(String(decoding: current, as: UTF8.self)); current.removeAll(keepingCapacity: true) }
                }
            }
            if !current.isEmpty { add(String(decoding: current, as: UTF8.self)) }
            return result
        }
        let folded = StringOptions([.caseInsensitive, .diacriticInsensitive]).fold(text)
        var current = String.UnicodeScalarView()
        var length = 0
        for scalar in folded.unicodeScalars {
            if isTokenScalar(scalar) {
                if length < maximumLength { current.append(scalar); length += 1 }
            } else if length > 0 {
                add(String(current))
                current = String.UnicodeScalarView()
                length = 0
            }
        }
        if length > 0 { add(String(current)) }
        return result
    }

    /// Letters, marks and digits make tokens.
    static func isTokenScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.properties.isAlphabetic { return true }
        switch scalar.properties.generalCategory {
        case .decimalNumber, .letterNumber, .otherNumber, .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }
}

/// A location as a point on the unit sphere, and its cell on a Z-order curve, as the search
/// tables keep it.
///
/// Distances are great-circle distances on a sphere of radius ``earthRadius`` (the mean Earth
/// radius; the ellipsoid's distances differ by at most about 0.5%), without altitude. They are
/// compared as chords: the straight-line distance between two points on the unit sphere grows
/// with the arc between them, and needs only arithmetic, so every database compares and sorts
/// by it the same way.
///
/// The cell interleaves the bits of the latitude and longitude, each scaled to 31 bits (about
/// 1 cm), into 62 bits; a square of the curve is a range of cells, so an index on the cell
/// finds the points in a box with a few range scans (``cover(center:distance:)``).
public struct GeoPoint: Sendable, Hashable {
    /// The mean radius of the Earth in metres (IUGG).
    public static let earthRadius = 6_371_008.8

    public var x: Double
    public var y: Double
    public var z: Double
    /// The point's cell on the Z-order curve.
    public var cell: Int64

    /// The point at `location`'s latitude and longitude (degrees; any values, taken as angles).
    public init(_ location: Location) {
        self.init(latitude: location.latitude, longitude: location.longitude)
    }

    public init(latitude: Double, longitude: Double) {
        let phi = latitude * .pi / 180
        let lambda = longitude * .pi / 180
        x = cos(phi) * cos(lambda)
        y = cos(phi) * sin(lambda)
        z = sin(phi)
        // The cell of the point itself, whatever angles named it.
        let (lat, lon) = Self.degrees(x: x, y: y, z: z)
        cell = Self.cell(Self.quantizedLongitude(lon), Self.quantizedLatitude(lat))
    }

    /// The latitude and longitude (degrees, in range) of a point of the unit sphere.
    static func degrees(x: Double, y: Double, z: Double) -> (latitude: Double, longitude: Double) {
        let latitude = asin(max(-1, min(1, z))) * 180 / .pi
        let longitude = (x == 0 && y == 0) ? 0 : atan2(y, x) * 180 / .pi
        return (latitude, longitude)
    }

    /// The square of the chord between this point and `other`.
    public func chordSquared(to other: GeoPoint) -> Double {
        let dx = x - other.x, dy = y - other.y, dz = z - other.z
        return dx * dx + dy * dy + dz * dz
    }

    /// The square of the chord of a great-circle distance of `metres`: a point is within the
    /// distance when its ``chordSquared(to:)`` is at most this. Past half the Earth's
    /// circumference every point is.
    public static func chordSquared(ofDistance metres: Double) -> Double {
        let angle = metres / earthRadius
        if angle >= .pi { return 4.5 }
        let chord = 2 * sin(angle / 2)
        return chord * chord
    }

    static let cellBits = 31
    static let cellScale = Double(1 << cellBits)

    static func quantizedLatitude(_ degrees: Double) -> Int64 {
        Int64(max(0, min(cellScale - 1, ((degrees + 90) / 180 * cellScale).rounded(.down))))
    }

    static func quantizedLongitude(_ degrees: Double) -> Int64 {
        Int64(max(0, min(cellScale - 1, ((degrees + 180) / 360 * cellScale).rounded(.down))))
    }

    /// The Z-order cell of quantized coordinates: longitude bits in the odd places, latitude's
    /// in the even ones.
    static func cell(_ longitude: Int64, _ latitude: Int64) -> Int64 {
        spread(longitude) << 1 | spread(latitude)
    }

    /// The bits of a 31-bit number moved to the even places of 62 bits.
    static func spread(_ value: Int64) -> Int64 {
        var v = UInt64(value) & 0x7FFF_FFFF
        v = (v | v << 16) & 0x0000_FFFF_0000_FFFF
        v = (v | v << 8) & 0x00FF_00FF_00FF_00FF
        v = (v | v << 4) & 0x0F0F_0F0F_0F0F_0F0F
        v = (v | v << 2) & 0x3333_3333_3333_3333
        v = (v | v << 1) & 0x5555_5555_5555_5555
        return Int64(v)
    }

    /// The most cell ranges ``cover(center:distance:)`` gives for one box.
    static let maximumCellsPerBox: Int64 = 16

    /// Ranges of cells (inclusive, sorted, disjoint) holding every point within `metres` of
    /// `center`, or `nil` when the distance reaches past half the Earth (every point). The
    /// ranges cover the circle's bounding box (two boxes across the ±180° meridian, a band of
    /// latitude round a pole the circle holds) with at most 16 squares of the curve a box.
    public static func cover(center: Location, distance metres: Double) -> [ClosedRange<Int64>]? {
        let angle = metres / earthRadius
        if angle >= .pi / 2 { return nil }
        let point = GeoPoint(center)
        let (latitude, longitude) = degrees(x: point.x, y: point.y, z: point.z)
        let angleDegrees = angle * 180 / .pi
        // A margin for rounding: about a centimetre.
        let margin = 1e-7
        var south = latitude - angleDegrees - margin
        var north = latitude + angleDegrees + margin
        var boxes: [(west: Double, east: Double)] = []
        if south <= -90 || north >= 90 {
            south = max(south, -90)
            north = min(north, 90)
            boxes = [(-180, 180)]
        } else {
            let spread = asin(min(1, sin(angle) / cos(latitude * .pi / 180))) * 180 / .pi + margin
            let west = longitude - spread, east = longitude + spread
            if west < -180 {
                boxes = [(west + 360, 180), (-180, east)]
            } else if east > 180 {
                boxes = [(west, 180), (-180, east - 360)]
            } else {
                boxes = [(west, east)]
            }
        }
        let lat0 = quantizedLatitude(south), lat1 = quantizedLatitude(north)
        var ranges: [ClosedRange<Int64>] = []
        for box in boxes {
            let lon0 = quantizedLongitude(box.west), lon1 = quantizedLongitude(box.east)
            var shift: Int64 = 0
            while ((lon1 >> shift) - (lon0 >> shift) + 1) * ((lat1 >> shift) - (lat0 >> shift) + 1) > maximumCellsPerBox {
                shift += 1
            }
            for cx in (lon0 >> shift)...(lon1 >> shift) {
                for cy in (lat0 >> shift)...(lat1 >> shift) {
                    let low = cell(cx << shift, cy << shift)
                    ranges.append(low...(low | ((1 << (2 * shift)) - 1)))
                }
            }
        }
        ranges.sort { $0.lowerBound < $1.lowerBound }
        var merged: [ClosedRange<Int64>] = []
        for range in ranges {
            if let last = merged.last, range.lowerBound <= last.upperBound + 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }
}
