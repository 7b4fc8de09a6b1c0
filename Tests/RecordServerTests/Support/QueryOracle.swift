import Foundation
import RecordModel

/// The query language's meaning, written a second time in plain Swift over in-memory records:
/// the oracle the differential test (`QueryOracleTests`) holds the server's engines and the
/// client's cache to. It shares no code with the query compiler or ``FilterPlan``: string
/// patterns run on Swift's own `Regex` (in Unicode-scalar mode), `LIKE` is translated to one.
///
/// The rules it encodes (docs/protocol.md, "The query language"):
/// - three-valued logic: a comparison with a field the record lacks is unknown; `NOT` of
///   unknown is unknown; `AND`/`OR` as in SQL; a record matches when every filter is true;
/// - a list field the record lacks is an empty list;
/// - strings compare by code points; with options, after Foundation's folding and canonical
///   composition on both sides; an empty value is contained in, begins and ends everything;
/// - a key path `a.b` is true when some record the reference (or reference list) `a` points at,
///   of a type that has a field `b`, passes `b`; never unknown.
struct QueryOracle {
    /// Every record of the zone, by name.
    let records: [String: Record]
    /// The field types of each record type, as the server infers them from the records.
    let schemas: [String: [String: FieldType]]

    init(records: [Record]) {
        self.records = Dictionary(uniqueKeysWithValues: records.map { ($0.recordName, $0) })
        var schemas: [String: [String: FieldType]] = [:]
        for record in records {
            for (name, value) in record.fields { schemas[record.recordType, default: [:]][name] = value.type }
        }
        self.schemas = schemas
    }

    func matches(_ record: Record, _ filters: [QueryFilter]) -> Bool {
        filters.allSatisfy { evaluate($0, record) == true }
    }

    func evaluate(_ filter: QueryFilter, _ record: Record) -> Bool? {
        if let logical = filter.recordSyncOperator {
            let parts = (filter.recordSyncFilters ?? []).map { evaluate($0, record) }
            switch logical {
            case .not: return parts[0].map { !$0 }
            case .and: return parts.contains(false) ? false : parts.contains(nil) ? nil : true
            case .or: return parts.contains(true) ? true : parts.contains(nil) ? nil : false
            }
        }
        let comparator = filter.comparator!
        let value = filter.fieldValue!.value
        let options = filter.recordSyncOptions ?? ""
        if comparator == .containsAllTokens || comparator == .containsAnyTokens, !(filter.fieldName ?? "").contains(".") {
            let field = filter.fieldName == "allTokens" ? nil : filter.fieldName
            let held = Set(record.fields.filter { field == nil || $0.key == field }.values.flatMap(Self.words(of:)))
            let wanted = Self.words(in: Self.string(value))
            return comparator == .containsAllTokens ? wanted.allSatisfy(held.contains) : wanted.contains(where: held.contains)
        }
        if comparator == .near, !filter.fieldName!.contains(".") {
            guard case .location(let place)? = record.fields[filter.fieldName!] else { return nil }
            return Self.metres(from: place, to: Self.location(value)) <= filter.distance!
        }
        if let system = filter.systemFieldName {
            switch system {
            case .recordName: return compareScalar(.string(record.recordName), comparator, value, options)
            default: fatalError("the generator makes no filter on \(system)")
            }
        }
        let name = filter.fieldName!
        if let dot = name.firstIndex(of: "."), schemas[record.recordType]?[String(name[..<dot])]?.scalar == .nested {
            // Inside a NESTED field: the value at the path, compared if it is of the kind given.
            var json: JSONValue? = if case .nested(let value)? = record.fields[String(name[..<dot])] { value } else { nil }
            for key in name[name.index(after: dot)...].split(separator: ".") { json = json?[String(key)] }
            let sample: JSONValue = if case .array(let elements) = value { elements.first ?? .string("") } else { value }
            switch (json, sample) {
            case (.string(let text)?, .string): return compareString(text, comparator, value, options)
            case (.int(let number)?, .int), (.int(let number)?, .double): return compareScalar(.double(Double(number)), comparator, value, options)
            case (.double(let number)?, .int), (.double(let number)?, .double): return compareScalar(.double(number), comparator, value, options)
            case (.bool(let flag)?, .bool(let other)):
                switch comparator {
                case .equals: return flag == other
                case .notEquals: return flag != other
                default: fatalError("no \(comparator) on a boolean")
                }
            default: return nil
            }
        }
        if let dot = name.firstIndex(of: ".") {
            let first = String(name[..<dot]), rest = String(name[name.index(after: dot)...])
            let next = String(rest.prefix { $0 != "." })
            var inner = filter
            inner.fieldName = rest
            let targets: [String] = switch record.fields[first] {
            case .reference(let reference)?: [reference.recordName]
            case .list(_, let elements)?: elements.compactMap { if case .reference(let reference) = $0 { reference.recordName } else { nil } }
            default: []
            }
            return targets.contains { target in
                guard let record = records[target] else { return false }
                if next == "allTokens" { return evaluate(inner, record) == true }
                guard let type = schemas[record.recordType]?[next] else { return false }
                var inner = inner
                if next == rest, !type.isList {
                    // A list comparator through a key path compares the single field of each record reached.
                    inner.comparator = [.listContains: .equals, .listMemberBeginsWith: .beginsWith, .listContainsAny: .in][comparator] ?? comparator
                }
                return evaluate(inner, record) == true
            }
        }
        let type = schemas[record.recordType]![name]!
        if type.isList {
            let elements: [FieldValue] = if case .list(_, let elements)? = record.fields[name] { elements } else { [] }
            return compareList(elements, comparator, value, options)
        }
        guard let field = record.fields[name] else { return nil }
        return compareScalar(field, comparator, value, options)
    }

    // MARK: Single values

    private func compareScalar(_ field: FieldValue, _ comparator: QueryComparator, _ value: JSONValue, _ options: String) -> Bool? {
        if case .reference(let reference) = field {
            let names = Self.names(value)
            switch comparator {
            case .equals, .in: return names.contains(reference.recordName)
            case .notEquals, .notIn: return !names.contains(reference.recordName)
            default: fatalError("no \(comparator) on a reference")
            }
        }
        if case .string(let text) = field {
            return compareString(text, comparator, value, options)
        }
        let number = Self.number(field)
        switch comparator {
        case .in: return Self.list(value).contains { Self.number($0) == number }
        case .notIn: return !Self.list(value).contains { Self.number($0) == number }
        default: break
        }
        let other = Self.number(value)
        switch comparator {
        case .equals: return number == other
        case .notEquals: return number != other
        case .lessThan: return number < other
        case .lessThanOrEquals: return number <= other
        case .greaterThan: return number > other
        case .greaterThanOrEquals: return number >= other
        default: fatalError("no \(comparator) on a number")
        }
    }

    private func compareString(_ text: String, _ comparator: QueryComparator, _ value: JSONValue, _ options: String) -> Bool {
        let scalars = Self.scalars(Self.fold(text, options))
        switch comparator {
        case .in: return Self.list(value).contains { Self.scalars(Self.fold(Self.string($0), options)) == scalars }
        case .notIn: return !Self.list(value).contains { Self.scalars(Self.fold(Self.string($0), options)) == scalars }
        default: break
        }
        let pattern = Self.string(value)
        let other = Self.scalars(Self.fold(pattern, options))
        switch comparator {
        case .equals: return scalars == other
        case .notEquals: return scalars != other
        case .lessThan: return scalars.lexicographicallyPrecedes(other)
        case .lessThanOrEquals: return !other.lexicographicallyPrecedes(scalars)
        case .greaterThan: return other.lexicographicallyPrecedes(scalars)
        case .greaterThanOrEquals: return !scalars.lexicographicallyPrecedes(other)
        case .beginsWith, .listMemberBeginsWith: return Array(scalars.prefix(other.count)) == other
        case .notBeginsWith, .notListMemberBeginsWith: return Array(scalars.prefix(other.count)) != other
        case .endsWith: return Array(scalars.suffix(other.count)) == other
        case .contains:
            if other.isEmpty { return true }
            return scalars.count >= other.count && (0...(scalars.count - other.count)).contains { Array(scalars[$0..<($0 + other.count)]) == other }
        case .like: return Self.likeRegex(Self.fold(pattern, options), caseInsensitive: false).map { Self.wholeMatch($0, Self.fold(text, options)) } ?? false
        case .matches:
            var regex = try! Regex(pattern).matchingSemantics(.unicodeScalar)
            if options.contains("c") { regex = regex.ignoresCase() }
            return Self.wholeMatch(regex, Self.fold(text, options))
        default: fatalError("no \(comparator) on a string")
        }
    }

    // MARK: Lists

    private func compareList(_ elements: [FieldValue], _ comparator: QueryComparator, _ value: JSONValue, _ options: String) -> Bool {
        func equal(_ element: FieldValue, _ value: JSONValue) -> Bool {
            switch element {
            case .reference(let reference): return reference.recordName == Self.names(value).first
            case .string(let text): return compareString(text, .equals, value, options)
            default: return Self.number(element) == Self.number(value)
            }
        }
        func has(_ value: JSONValue) -> Bool { elements.contains { equal($0, value) } }
        func anyString(_ comparator: QueryComparator) -> Bool {
            elements.contains { if case .string(let text) = $0 { compareString(text, comparator, value, options) } else { false } }
        }
        switch comparator {
        case .listContains, .contains: return has(value)
        case .notListContains: return !has(value)
        case .listContainsAny: return Self.list(value).contains(where: has)
        case .notListContainsAny: return !Self.list(value).contains(where: has)
        case .listContainsAll: return Self.list(value).allSatisfy(has)
        case .notListContainsAll: return !Self.list(value).allSatisfy(has)
        case .listMemberBeginsWith: return anyString(.beginsWith)
        case .notListMemberBeginsWith: return !anyString(.beginsWith)
        case .endsWith, .like, .matches: return anyString(comparator)
        default: fatalError("no \(comparator) on a list")
        }
    }

    // MARK: Words and places

    /// The words of a text: folded as `[cd]` folds, then the runs of letters, marks and digits.
    static func words(in text: String) -> [String] {
        let folded = fold(text, "cd")
        var words: [String] = []
        var word = ""
        for scalar in folded.unicodeScalars {
            let category = scalar.properties.generalCategory
            if scalar.properties.isAlphabetic || [.decimalNumber, .letterNumber, .otherNumber, .nonspacingMark, .spacingMark, .enclosingMark].contains(category) {
                word.unicodeScalars.append(scalar)
            } else if !word.isEmpty {
                words.append(word)
                word = ""
            }
        }
        if !word.isEmpty { words.append(word) }
        return words
    }

    /// The words of a field: a string's, a string list's elements'; no other field has words.
    static func words(of value: FieldValue) -> [String] {
        switch value {
        case .string(let text): words(in: text)
        case .list(.string, let elements): elements.flatMap(words(of:))
        default: []
        }
    }

    static func location(_ value: JSONValue) -> Location {
        Location(latitude: number(value["latitude"]!), longitude: number(value["longitude"]!))
    }

    /// The great-circle distance by the haversine formula, on a sphere of the mean Earth radius.
    static func metres(from a: Location, to b: Location) -> Double {
        let radians = Double.pi / 180
        let dLatitude = (b.latitude - a.latitude) * radians, dLongitude = (b.longitude - a.longitude) * radians
        let h = pow(sin(dLatitude / 2), 2) + cos(a.latitude * radians) * cos(b.latitude * radians) * pow(sin(dLongitude / 2), 2)
        return 2 * 6_371_008.8 * asin(min(1, sqrt(h)))
    }

    /// The distance of `record`'s field `field` from `center`, or `nil` without the field.
    static func distance(of record: Record, _ field: String, from center: Location) -> Double? {
        if case .location(let place)? = record.fields[field] { metres(from: place, to: center) } else { nil }
    }

    /// Whether a record at distance `a` may come before one at `b` (within a millimetre).
    static func inDistanceOrder(_ a: Double?, _ b: Double?, ascending: Bool) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (nil, _?): ascending
        case (_?, nil): !ascending
        case (let x?, let y?): ascending ? x <= y + 0.001 : x + 0.001 >= y
        }
    }

    /// The names of `records` sorted by the distance of their field `field` from `center`
    /// (a record without it first ascending, last descending), ties by name.
    static func sorted(_ records: [Record], byDistanceOf field: String, from center: Location, ascending: Bool) -> [String] {
        let keyed = records.map { record -> (name: String, metres: Double?) in
            if case .location(let place)? = record.fields[field] { (record.recordName, metres(from: place, to: center)) } else { (record.recordName, nil) }
        }
        return keyed.sorted { a, b in
            switch (a.metres, b.metres) {
            case (nil, nil): return a.name < b.name
            case (nil, _?): return ascending
            case (_?, nil): return !ascending
            case (let x?, let y?): return x == y ? a.name < b.name : (ascending ? x < y : x > y)
            }
        }.map(\.name)
    }

    // MARK: Values

    static func fold(_ text: String, _ options: String) -> String {
        var folding: String.CompareOptions = []
        if options.contains("c") { folding.insert(.caseInsensitive) }
        if options.contains("d") { folding.insert(.diacriticInsensitive) }
        return folding.isEmpty ? text : text.folding(options: folding, locale: nil).precomposedStringWithCanonicalMapping
    }

    static func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }

    static func string(_ value: JSONValue) -> String {
        guard case .string(let text) = value else { fatalError("not a string: \(value)") }
        return text
    }

    static func list(_ value: JSONValue) -> [JSONValue] {
        guard case .array(let elements) = value else { fatalError("not a list: \(value)") }
        return elements
    }

    static func names(_ value: JSONValue) -> [String] {
        switch value {
        case .string(let name): [name]
        case .array(let elements): elements.flatMap(names)
        default: value["recordName"].map(names) ?? []
        }
    }

    static func number(_ value: FieldValue) -> Double {
        switch value {
        case .int64(let number), .timestamp(let number): Double(number)
        case .double(let number): number
        default: fatalError("not a number: \(value)")
        }
    }

    static func number(_ value: JSONValue) -> Double {
        switch value {
        case .int(let number): Double(number)
        case .double(let number): number
        default: fatalError("not a number: \(value)")
        }
    }

    /// `*` any run, `?` one code point, `\x` the character x; every other code point itself.
    static func likeRegex(_ pattern: String, caseInsensitive: Bool) -> Regex<AnyRegexOutput>? {
        var source = ""
        var escaped = false
        for scalar in pattern.unicodeScalars {
            if !escaped && scalar == "\\" { escaped = true; continue }
            if !escaped && scalar == "*" { source += ".*" } else if !escaped && scalar == "?" { source += "." } else {
                source += String(format: "\\u{%X}", scalar.value)
            }
            escaped = false
        }
        if escaped { source += "\\\\" }
        return try? Regex(source).matchingSemantics(.unicodeScalar).dotMatchesNewlines()
    }

    static func wholeMatch(_ regex: Regex<AnyRegexOutput>, _ text: String) -> Bool {
        ((try? regex.wholeMatch(in: text)) ?? nil) != nil
    }
}

/// Seeded random records and filters for the differential test.
struct QueryGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// SplitMix64.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
    mutating func chance(_ probability: Double) -> Bool { Double(next() % 1_000_000) / 1_000_000 < probability }
    mutating func pick<T>(_ elements: [T]) -> T { elements[int(0...(elements.count - 1))] }

    static let words = [
        "Monet", "monet", "MONET", "Mönet", "Straße", "STRASSE", "strasse", "café", "cafe\u{301}", "Cafe", "blue sky", "Blue Sky",
        "sky", "a*b", "a?b", "x.y", "", "Ǆemal", "ǆ", "İstanbul", "istanbul", "Σίσυφος", "ΣΊΣΥΦΟΣ", "naïve", "NAIVE", "ab", "abab", "aab", "b",
    ]

    static let patterns = [
        "mo.*", "M.*", ".*t", ".*ss.*", "[a-m]+", "[^ ]+", "\\w+ \\w+", "(?:blue|sky).*", ".*(?:et|ky)", "caf.", "a.b", "a\\*b", "a+b",
        "(ab)+", "(a|b)*", "^.*$", ".{2,4}", "[A-Z].*", "\\S*", "x?y?.*e", "", "[0-9]*", "\\d", ".*\\s.*",
    ]

    static let cities = ["Paris", "paris", "Giverny", "Arles", "Zürich"]

    /// Words of notes and of word searches (hyphens and apostrophes separate words).
    static let noteWords = ["water", "lilies", "Water-Lilies", "Déjeuner", "dejeuner", "sur", "l'herbe", "STRASSE", "Straße", "café", "Cafe",
                            "naïve", "Σίσυφος", "İstanbul", "blue sky", "42", "x2", "a*b", "Ǆemal"]

    /// Places: a few cities, both sides of the ±180° meridian, near both poles.
    static let places = [
        Location(latitude: 48.8566, longitude: 2.3522), Location(latitude: 48.8606, longitude: 2.3376), Location(latitude: 49.0756, longitude: 1.5337),
        Location(latitude: 43.6768, longitude: 4.6303), Location(latitude: 40.7128, longitude: -74.006), Location(latitude: -17.7, longitude: 179.95),
        Location(latitude: -17.7, longitude: -179.97), Location(latitude: 89.95, longitude: 10), Location(latitude: 89.97, longitude: -170),
        Location(latitude: -89.9, longitude: 45), Location(latitude: 0, longitude: 0),
    ]

    /// A place, a few hundred metres off now and then.
    mutating func place() -> Location {
        var place = pick(Self.places)
        if chance(0.4) { place.latitude = max(-90, min(90, place.latitude + Double(int(-3...3)) / 1000)) }
        if chance(0.4) { place.longitude += Double(int(-3...3)) / 1000 }
        if place.longitude > 180 { place.longitude -= 360 }
        if place.longitude < -180 { place.longitude += 360 }
        return place
    }

    /// `labels` records of type `Label` (`l00`…: `n`, `title`, `city`), then `count` of type
    /// `Item` (`i00`…), each referring only to labels and earlier items.
    mutating func records(_ count: Int, labels: Int) -> [Record] {
        let labelNames = (0..<labels).map { String(format: "l%02d", $0) }
        let labelRecords = labelNames.map { name in
            var record = Record(recordName: name, recordType: "Label")
            if chance(0.8) { record.fields["n"] = .int64(Int64(int(0...9))) }
            if chance(0.8) { record.fields["title"] = .string(pick(Self.words)) }
            if chance(0.7) { record.fields["city"] = .string(pick(Self.cities)) }
            if chance(0.5) { record.fields["place"] = .location(place()) }
            return record
        }
        return labelRecords + (0..<count).map { index in
            var record = Record(recordName: String(format: "i%02d", index), recordType: "Item")
            let earlier = labelNames + (0..<index).map { String(format: "i%02d", $0) }
            if chance(0.85) { record.fields["title"] = .string(pick(Self.words)) }
            if chance(0.8) { record.fields["n"] = .int64(Int64(int(0...9))) }
            if chance(0.6) { record.fields["note"] = .string((0..<int(1...4)).map { _ in pick(Self.noteWords) }.joined(separator: pick([" ", ", ", "-"]))) }
            if chance(0.7) { record.fields["place"] = .location(place()) }
            if chance(0.7) { record.fields["x"] = .double(Double(int(-5...15)) / 2) }
            if chance(0.7) { record.fields["ts"] = .timestamp(Int64(int(0...5)) * 1000) }
            if chance(0.75) { record.fields["tags"] = .list(.string, (0..<int(0...3)).map { _ in .string(pick(Self.words)) }) }
            if chance(0.6) { record.fields["nums"] = .list(.int64, (0..<int(0...3)).map { _ in .int64(Int64(int(0...9))) }) }
            if !earlier.isEmpty, chance(0.6) { record.fields["owner"] = .reference(Reference(recordName: pick(earlier), action: .none)) }
            if chance(0.7) {
                var meta: [String: JSONValue] = [:]
                if chance(0.8) { meta["city"] = chance(0.9) ? .string(pick(Self.cities)) : .int(3) }
                if chance(0.8) { meta["n"] = chance(0.5) ? .int(Int64(int(0...9))) : .double(Double(int(0...19)) / 2) }
                if chance(0.5) { meta["flag"] = .bool(chance(0.5)) }
                if chance(0.5) { meta["sub"] = .object(["x": chance(0.8) ? .string(pick(Self.words)) : .null]) }
                record.fields["meta"] = .nested(.object(meta))
            }
            if !earlier.isEmpty, chance(0.5) {
                record.fields["links"] = .list(.reference, (0..<int(0...3)).map { _ in .reference(Reference(recordName: pick(earlier), action: .none)) })
            }
            return record
        }
    }

    /// A random filter nesting compound filters at most `depth` deep.
    mutating func filter(depth: Int, names: [String]) -> QueryFilter {
        if depth > 0, chance(0.35) {
            switch int(0...2) {
            case 0: return .not(filter(depth: depth - 1, names: names))
            case 1: return .and((0..<int(0...3)).map { _ in filter(depth: depth - 1, names: names) })
            default: return .or((0..<int(0...3)).map { _ in filter(depth: depth - 1, names: names) })
            }
        }
        return comparison(names: names)
    }

    private mutating func word() -> String { pick(Self.words) }

    /// A piece of a word, by code points, sometimes with its case changed.
    private mutating func piece() -> String {
        let scalars = Array(word().unicodeScalars)
        let start = scalars.isEmpty ? 0 : int(0...scalars.count)
        let end = start + (scalars.count > start ? int(0...(scalars.count - start)) : 0)
        var piece = String(String.UnicodeScalarView(scalars[start..<end]))
        if chance(0.3) { piece = chance(0.5) ? piece.uppercased() : piece.lowercased() }
        return piece
    }

    /// A LIKE pattern: a word with some code points turned into `?` or `*`.
    private mutating func likePattern() -> String {
        var pattern = ""
        for scalar in word().unicodeScalars {
            switch int(0...9) {
            case 0: pattern += "?"
            case 1: pattern += "*"
            case 2: break
            default:
                // The word's own wildcard characters, escaped, stand for themselves.
                if scalar == "*" || scalar == "?" || scalar == "\\" { pattern += "\\" }
                pattern.unicodeScalars.append(scalar)
            }
        }
        if chance(0.3) { pattern = "*" + pattern }
        if chance(0.3) { pattern += "*" }
        return pattern
    }

    private mutating func options() -> String? { pick([nil, "c", "d", "cd"]) }

    private mutating func ints(_ count: ClosedRange<Int>) -> JSONValue { .array((0..<int(count)).map { _ in .int(Int64(int(0...10))) }) }

    private mutating func comparison(names: [String]) -> QueryFilter {
        let ordered: [QueryComparator] = [.equals, .notEquals, .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals]
        if chance(0.2) { return keyPath(names: names, ordered: ordered) }
        if chance(0.12) { return nested(ordered: ordered) }
        if chance(0.12) { return wordSearch(field: pick([nil, "allTokens", "allTokens", "note", "title", "tags", "city"])) }
        if chance(0.15) { return near("place") }
        switch int(0...10) {
        case 0:
            let comparator = pick(ordered + [.in, .notIn])
            return QueryFilter("n", comparator, RawFieldValue(value: comparator.takesList ? ints(0...3) : .int(Int64(int(-1...10)))))
        case 1:
            let comparator = pick(ordered + [.in, .notIn])
            let value: JSONValue = comparator.takesList ? .array((0..<int(0...3)).map { _ in .double(Double(int(-5...15)) / 2) }) : .double(Double(int(-6...16)) / 2)
            return QueryFilter("x", comparator, RawFieldValue(value: value))
        case 2:
            return QueryFilter("ts", pick(ordered), RawFieldValue(value: .int(Int64(int(0...6)) * 1000)))
        case 3:
            let comparator = pick(ordered + [.in, .notIn, .beginsWith, .notBeginsWith])
            let value: JSONValue = comparator.takesList ? .array((0..<int(0...3)).map { _ in .string(word()) })
                : .string(comparator == .beginsWith || comparator == .notBeginsWith ? piece() : word())
            return QueryFilter("title", comparator, RawFieldValue(value: value))
        case 4, 5:
            let comparator = pick([QueryComparator.equals, .notEquals, .beginsWith, .notBeginsWith, .contains, .endsWith, .like, .matches])
            return QueryFilter("title", comparator, RawFieldValue(value: .string(stringValue(for: comparator))), options: options())
        case 6:
            let comparator = pick([QueryComparator.listContains, .notListContains, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll,
                                   .listMemberBeginsWith, .notListMemberBeginsWith, .contains, .endsWith, .like, .matches])
            let value: JSONValue = comparator.takesList ? .array((0..<int(0...3)).map { _ in .string(word()) }) : .string(stringValue(for: comparator))
            let takesOptions = !comparator.takesList
            return QueryFilter("tags", comparator, RawFieldValue(value: value), options: takesOptions ? options() : nil)
        case 7:
            let comparator = pick([QueryComparator.listContains, .notListContains, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll])
            return QueryFilter("nums", comparator, RawFieldValue(value: comparator.takesList ? ints(0...3) : .int(Int64(int(0...10)))))
        case 8:
            let comparator = pick([QueryComparator.equals, .notEquals, .in, .notIn])
            let value: JSONValue = comparator.takesList ? .array((0..<int(0...3)).map { _ in .string(pick(names)) }) : .string(pick(names))
            return QueryFilter("owner", comparator, RawFieldValue(value: value))
        case 9:
            let comparator = pick([QueryComparator.listContains, .notListContains, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll])
            let value: JSONValue = comparator.takesList ? .array((0..<int(0...3)).map { _ in .string(pick(names)) }) : .string(pick(names))
            return QueryFilter("links", comparator, RawFieldValue(value: value))
        default:
            let comparator = pick([QueryComparator.equals, .notEquals, .lessThan, .greaterThan, .in, .beginsWith, .contains, .endsWith, .like, .matches])
            let value: JSONValue = comparator == .in ? .array((0..<int(0...3)).map { _ in .string(pick(names)) })
                : .string(comparator == .matches ? "i[0-2]." : comparator == .like ? pick(["i?1", "*3", "i0*"]) : pick(names + ["i", "1", "i0"]))
            let options = [.contains, .endsWith, .like, .matches, .beginsWith].contains(comparator) ? self.options() : nil
            return QueryFilter(system: .recordName, comparator, RawFieldValue(value: value), options: options)
        }
    }

    /// A comparison of a value inside the NESTED field `meta`.
    private mutating func nested(ordered: [QueryComparator]) -> QueryFilter {
        switch int(0...4) {
        case 0:
            let comparator = pick(ordered + [.in, .notIn, .beginsWith, .notBeginsWith])
            let value: JSONValue = comparator.takesList ? .array((0..<int(1...2)).map { _ in .string(pick(Self.cities)) })
                : .string(comparator == .beginsWith || comparator == .notBeginsWith ? pick(["Pa", "pa", "A", ""]) : pick(Self.cities))
            // Now and then a string against the numbers: unknown, whatever the comparison.
            return QueryFilter(chance(0.85) ? "meta.city" : "meta.n", comparator, RawFieldValue(value: value))
        case 1:
            let comparator = pick([QueryComparator.equals, .notEquals, .contains, .like, .beginsWith, .endsWith, .matches])
            return QueryFilter("meta.city", comparator, RawFieldValue(value: .string(comparator == .matches ? pick(["[a-z]+", "P.*", ".*s"]) : comparator == .like ? pick(["*ar*", "?aris", "Z*"]) : pick(["paris", "Arl", "es", "ZÜRICH"]))),
                               options: pick([nil, "c", "cd"]))
        case 2:
            let comparator = pick(ordered + [.in, .notIn])
            let value: JSONValue = comparator.takesList ? ints(1...3) : (chance(0.5) ? .int(Int64(int(0...9))) : .double(Double(int(0...19)) / 2))
            return QueryFilter(chance(0.8) ? "meta.n" : "meta.city", comparator, RawFieldValue(value: value))
        case 3:
            return QueryFilter("meta.flag", pick([.equals, .notEquals]), RawFieldValue(value: .bool(chance(0.5))))
        default:
            let comparator = pick([QueryComparator.equals, .notEquals, .beginsWith, .lessThan])
            return QueryFilter("meta.sub.x", comparator, RawFieldValue(value: .string(comparator == .beginsWith ? piece() : word())))
        }
    }

    /// Words to search for: one to three, in any case and with or without their marks.
    mutating func searchWords() -> String {
        (0..<int(1...3)).map { _ in
            var word = pick(Self.noteWords + Self.words.filter { !$0.isEmpty && $0 != "a*b" && $0 != "a?b" } + Self.cities)
            if chance(0.3) { word = chance(0.5) ? word.uppercased() : word.lowercased() }
            return word
        }.joined(separator: " ")
    }

    /// `CONTAINS_ALL_TOKENS` or `CONTAINS_ANY_TOKENS` over `field` (nil: every text field).
    private mutating func wordSearch(field: String?) -> QueryFilter {
        var filter = QueryFilter(field ?? "allTokens", pick([.containsAllTokens, .containsAnyTokens]), RawFieldValue(value: .string(searchWords())))
        if field == nil { filter.fieldName = nil }
        return filter
    }

    /// `NEAR` on the LOCATION field `field`.
    mutating func near(_ field: String) -> QueryFilter {
        // Half of them round the ±180° meridian or a pole, where the index's boxes split.
        let center = chance(0.5) ? pick(Array(Self.places[5...9])) : place()
        return QueryFilter(field, near: center, within: pick([0, 10, 500, 1_000, 20_000, 50_000, 300_000, 1_000_000, 5_000_000, 12_000_000, 30_000_000]))
    }

    /// A comparison through one or two references (`owner.n`, `links.owner.title`, …).
    private mutating func keyPath(names: [String], ordered: [QueryComparator]) -> QueryFilter {
        let prefix = pick(["owner", "links", "owner.owner", "links.owner", "owner.links"])
        if chance(0.15) { return near(prefix + ".place") }
        if chance(0.15) {
            var filter = wordSearch(field: nil)
            filter.fieldName = prefix + "." + pick(["allTokens", "title", "city", "note"])
            return filter
        }
        switch int(0...5) {
        case 0, 1:
            // LIST_CONTAINS and friends on a single field reached: how ANY travels.
            let comparator = pick(ordered + [.in, .notIn, .listContains, .listContainsAny])
            return QueryFilter(prefix + ".n", comparator, RawFieldValue(value: comparator.takesList ? ints(0...3) : .int(Int64(int(-1...10)))))
        case 2:
            let comparator = pick(ordered + [.in, .beginsWith, .notBeginsWith])
            let value: JSONValue = comparator.takesList ? .array((0..<int(0...3)).map { _ in .string(word()) }) : .string(comparator == .beginsWith || comparator == .notBeginsWith ? piece() : word())
            return QueryFilter(prefix + ".title", comparator, RawFieldValue(value: value))
        case 3:
            let comparator = pick([QueryComparator.equals, .notEquals, .in, .beginsWith])
            let value: JSONValue = comparator.takesList ? .array([.string(pick(Self.cities)), .string(pick(Self.cities))]) : .string(comparator == .beginsWith ? "Pa" : pick(Self.cities))
            return QueryFilter(prefix + ".city", comparator, RawFieldValue(value: value))
        case 4:
            let comparator = pick([QueryComparator.listContains, .notListContains, .listContainsAny, .listContainsAll, .listMemberBeginsWith])
            let value: JSONValue = comparator.takesList ? .array((0..<int(0...2)).map { _ in .string(word()) }) : .string(comparator == .listMemberBeginsWith ? piece() : word())
            return QueryFilter(prefix + ".tags", comparator, RawFieldValue(value: value))
        default:
            let comparator = pick([QueryComparator.equals, .notEquals, .in, .notIn])
            let value: JSONValue = comparator.takesList ? .array((0..<int(1...3)).map { _ in .string(pick(names)) }) : .string(pick(names))
            return QueryFilter("owner.owner", comparator, RawFieldValue(value: value))
        }
    }

    private mutating func stringValue(for comparator: QueryComparator) -> String {
        switch comparator {
        case .like: likePattern()
        case .matches: pick(Self.patterns)
        case .equals, .notEquals, .listContains, .notListContains: chance(0.5) ? word() : piece()
        default: piece()
        }
    }
}
