import Foundation

/// Helpers shared by ``RecordEncoder`` and ``RecordDecoder``.
enum RecordCoding {
    /// A coding path as an error reason shows it: `'tags[2]'`; `'(top level)'` when empty.
    static func quoted(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue, key is IndexKey {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return NameRules.quoted(text.isEmpty ? "(top level)" : text)
    }

    /// The field type a value of `type` is stored as, when the static type tells:
    /// the scalar types, and enums whose raw value is one of them.
    static func scalarType(of type: Any.Type) -> ScalarType? {
        if let scalar = type as? any RecordFieldScalar.Type { return scalar.recordScalarType }
        if let raw = type as? any RawRepresentable.Type { return rawValueScalarType(of: raw) }
        return nil
    }

    private static func rawValueScalarType<Value: RawRepresentable>(of type: Value.Type) -> ScalarType? {
        scalarType(of: Value.RawValue.self)
    }

    /// Whether `type` is an `Optional`.
    static func isOptional(_ type: Any.Type) -> Bool { type is any OptionalMarker.Type }
}

/// The key of a list element in a coding path.
struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { intValue.map(String.init) ?? "" }

    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) {
        guard let index = Int(stringValue) else { return nil }
        intValue = index
    }
}

/// Marks `Optional`, so the coders can reject lists of optionals by their static type.
protocol OptionalMarker {}
extension Optional: OptionalMarker {}

/// Marks `Dictionary`, whose non-string keys would otherwise encode as a flat list of
/// alternating keys and values.
protocol DictionaryMarker {}
extension Dictionary: DictionaryMarker {}

/// A collection that encodes as a list field; tells the element type of an empty one.
protocol RecordFieldCollection {
    /// The static element type.
    static var recordElementType: Any.Type { get }
}

extension Array: RecordFieldCollection {
    static var recordElementType: Any.Type { Element.self }
}

extension ContiguousArray: RecordFieldCollection {
    static var recordElementType: Any.Type { Element.self }
}

extension Set: RecordFieldCollection {
    static var recordElementType: Any.Type { Element.self }
}
