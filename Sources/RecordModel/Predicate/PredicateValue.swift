import Foundation

/// A value a predicate compares a key with: a literal or an argument, read into its wire form.
struct PredicateValue {
    /// The `value` member of the wire form.
    var json: JSONValue
    /// The scalar type of the value, or of its elements; `nil` for an empty list of unknown type.
    var scalar: ScalarType?
    /// Whether the value is a list (for `IN`, `LIST_CONTAINS_ANY`, …).
    var isList: Bool

    /// The wire form, typed as a scalar or a list of `scalar`.
    var raw: RawFieldValue {
        RawFieldValue(value: json, type: scalar.map { FieldType($0, isList: isList) })
    }

    /// A scalar value.
    init(json: JSONValue, scalar: ScalarType) {
        self.json = json
        self.scalar = scalar
        self.isList = false
    }

    private init(list: [JSONValue], scalar: ScalarType?) {
        self.json = .array(list)
        self.scalar = scalar
        self.isList = true
    }

    /// A list of scalar values, typed by their common type (integers among doubles become
    /// doubles).
    ///
    /// - Parameter elementType: the static element type, used when the list is empty.
    /// - Throws: a reason when an element is itself a list or the elements' types differ.
    static func list(_ elements: [PredicateValue], elementType: ScalarType?) throws(PredicateValueProblem) -> PredicateValue {
        var scalar: ScalarType?
        for element in elements {
            guard !element.isList else { throw PredicateValueProblem("an array cannot hold arrays") }
            guard let current = scalar, let next = element.scalar, current != next else {
                scalar = scalar ?? element.scalar
                continue
            }
            if [current, next].allSatisfy({ $0 == .int64 || $0 == .double }) {
                scalar = .double
            } else {
                throw PredicateValueProblem("an array mixes \(current.rawValue) and \(next.rawValue) elements")
            }
        }
        let json = elements.map { element in
            if scalar == .double, case .int(let number) = element.json { return JSONValue.double(Double(number)) }
            return element.json
        }
        return PredicateValue(list: json, scalar: scalar ?? elementType)
    }

    /// Reads a format argument: `String`, any integer, `Double`, `Float`, `Bool`, `Date`,
    /// `Data`, ``Reference``, ``RecordID``, ``Record``, ``FieldValue``, or an array of them.
    ///
    /// - Throws: a reason naming the Swift type of an unsupported argument.
    init(argument: Any) throws(PredicateValueProblem) {
        switch argument {
        case let value as String: self.init(json: .string(value), scalar: .string)
        case let value as Substring: self.init(json: .string(String(value)), scalar: .string)
        case let value as Bool: self.init(json: .bool(value), scalar: .boolean)
        case let value as any BinaryInteger:
            guard let number = Int64(exactly: value) else { throw PredicateValueProblem("\(value) does not fit in INT64") }
            self.init(json: .int(number), scalar: .int64)
        case let value as Double: self = try Self.double(value)
        case let value as Float: self = try Self.double(Double(value))
        case let value as Date:
            let milliseconds = (value.timeIntervalSince1970 * 1000).rounded()
            guard let exact = Int64(exactly: milliseconds) else { throw PredicateValueProblem("the date \(value) is out of range") }
            self.init(json: .int(exact), scalar: .timestamp)
        case let value as Data: self.init(json: .string(value.base64EncodedString()), scalar: .bytes)
        case let value as Reference: self.init(json: FieldValue.reference(value).json, scalar: .reference)
        case let value as Location: self.init(json: FieldValue.location(value).json, scalar: .location)
        case let value as RecordID: try self.init(argument: Reference(recordID: value, action: .none))
        case let value as Record: try self.init(argument: Reference(recordID: value.recordID, action: .none))
        case let value as FieldValue:
            if case .list(let scalar, let elements) = value {
                self.init(list: elements.map(\.json), scalar: scalar)
            } else {
                self.init(json: value.json, scalar: value.type.scalar)
            }
        case let values as any ArrayElementTyped:
            let elements = try values.predicateElements.map { element throws(PredicateValueProblem) in try PredicateValue(argument: element) }
            self = try Self.list(elements, elementType: type(of: values).predicateElementScalar)
        default:
            throw PredicateValueProblem("an argument of type \(type(of: argument)) is not supported; pass a String, an integer, Double, Bool, Date, Data, Reference, RecordID, Record, FieldValue or an array of them")
        }
    }

    private static func double(_ value: Double) throws(PredicateValueProblem) -> PredicateValue {
        guard value.isFinite else { throw PredicateValueProblem("\(value) is not a finite number") }
        return PredicateValue(json: .double(value), scalar: .double)
    }
}

/// Why a value cannot be used; the parser adds the token and column.
struct PredicateValueProblem: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Arrays, seen through their static element type so that an empty `[String]` is still a
/// `STRING_LIST`.
protocol ArrayElementTyped {
    var predicateElements: [Any] { get }
    static var predicateElementScalar: ScalarType? { get }
}

extension Array: ArrayElementTyped {
    var predicateElements: [Any] { map { $0 } }

    static var predicateElementScalar: ScalarType? {
        switch Element.self {
        case is String.Type, is Substring.Type: .string
        case is Bool.Type: .boolean
        case is any BinaryInteger.Type: .int64
        case is Double.Type, is Float.Type: .double
        case is Date.Type: .timestamp
        case is Data.Type: .bytes
        case is Reference.Type, is RecordID.Type, is Record.Type: .reference
        default: nil
        }
    }
}
