import RecordModel
import RecordSQL
import RecordStorage

extension SQLStorageTransaction {
    public func schema(of recordType: String, inContainer container: Int64) throws -> [String: FieldType] {
        var types: [String: FieldType] = [:]
        for row in try fetch("SELECT field, type FROM schema_fields WHERE container_id = \(container) AND record_type = \(recordType)") {
            if let type = FieldType(rawValue: try row.string(1)) { types[try row.string(0)] = type }
        }
        return types
    }

    public func schemas(inContainer container: Int64) throws -> [String: [String: FieldType]] {
        var types: [String: [String: FieldType]] = [:]
        for row in try fetch("SELECT record_type, field, type FROM schema_fields WHERE container_id = \(container)") {
            if let type = FieldType(rawValue: try row.string(2)) { types[try row.string(0), default: [:]][try row.string(1)] = type }
        }
        return types
    }

    /// A field another writer typed differently in the meantime makes this write stale (its
    /// rules judged the save against a schema without the field).
    public func addSchemaField(_ field: String, type: FieldType, of recordType: String, inContainer container: Int64) throws {
        let inserted = try run("""
            INSERT INTO schema_fields(container_id, record_type, field, type) VALUES (\(container), \(recordType), \(field), \(type.rawValue))
            ON CONFLICT DO NOTHING
            """)
        if inserted == 0 {
            let stored = try fetch("SELECT type FROM schema_fields WHERE container_id = \(container) AND record_type = \(recordType) AND field = \(field)").first?.string(0)
            if stored != type.rawValue { throw StaleWrite("field \(field) of \(recordType) typed by another writer") }
        }
    }
}
