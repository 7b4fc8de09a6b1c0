import Foundation
import RecordModel
import RecordSQL
import RecordStorage

extension SQLStorageTransaction {
    public func schema(of recordType: String, inContainer container: Int64) throws -> [String: FieldType] {
        var types: [String: FieldType] = [:]
        for row in try fetch("SELECT field, type FROM schema_fields WHERE container_id = \(container) AND record_type = \(recordType) AND \(raw: Self.notSystem)") {
            if let type = FieldType(rawValue: try row.string(1)) { types[try row.string(0)] = type }
        }
        return types
    }

    public func schemas(inContainer container: Int64) throws -> [String: [String: FieldType]] {
        var types: [String: [String: FieldType]] = [:]
        for row in try fetch("SELECT record_type, field, type FROM schema_fields WHERE container_id = \(container) AND \(raw: Self.notSystem)") {
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

    /// The rows of fields of the records' own (a system field's row holds only its marks).
    static var notSystem: String { "substr(field, 1, 3) <> '___'" }

    public func typeSchema(of recordType: String, inContainer container: Int64) throws -> StoredTypeSchema {
        // One read: the container's lock, whether the type exists, its fields (a row each, or
        // one row of NULLs).
        let rows = try fetch("""
            SELECT c.schema_locked, t.record_type, f.field, f.type FROM containers c
            LEFT JOIN schema_types t ON t.container_id = c.id AND t.record_type = \(recordType)
            LEFT JOIN schema_fields f ON f.container_id = c.id AND f.record_type = \(recordType) AND \(raw: Self.notSystem)
            WHERE c.id = \(container)
            """)
        var fields: [String: FieldType] = [:]
        for row in rows {
            if let field = try row.optionalString(2), let type = FieldType(rawValue: try row.string(3)) { fields[field] = type }
        }
        return StoredTypeSchema(locked: try rows.first?.bool(0) ?? false, exists: try rows.first?.optionalString(1) != nil, fields: fields)
    }

    public func markedFields() throws -> [(field: String, type: FieldType)] {
        try fetch("SELECT DISTINCT field, type FROM schema_fields WHERE (queryable OR sortable) AND NOT encrypted AND \(raw: Self.notSystem)").compactMap { row in
            try FieldType(rawValue: row.string(1)).map { (try row.string(0), $0) }
        }
    }

    public func schemaIndexes(inContainer container: Int64) throws -> (locked: Bool, types: [String: [SchemaField]]) {
        let rows = try fetch("""
            SELECT c.schema_locked, t.record_type, f.field, f.type, f.queryable, f.sortable, f.searchable, f.encrypted FROM containers c
            LEFT JOIN schema_types t ON t.container_id = c.id
            LEFT JOIN schema_fields f ON f.container_id = c.id AND f.record_type = t.record_type WHERE c.id = \(container)
            """)
        var types: [String: [SchemaField]] = [:]
        for row in rows {
            guard let recordType = try row.optionalString(1) else { continue }
            guard let name = try row.optionalString(2), let type = FieldType(rawValue: try row.string(3)) else {
                if types[recordType] == nil { types[recordType] = [] }
                continue
            }
            types[recordType, default: []].append(SchemaField(name: name, type: type, encrypted: try row.bool(7), queryable: try row.bool(4),
                                                              sortable: try row.bool(5), searchable: try row.bool(6)))
        }
        return (try rows.first?.bool(0) ?? false, types)
    }

    public func markIndex(_ index: SchemaIndexUse.Index, onField field: String, type: FieldType, of recordType: String, inContainer container: Int64) throws {
        let column = index.rawValue
        guard field.hasPrefix("___") else {
            try run("UPDATE schema_fields SET \(raw: column) = \(true) WHERE container_id = \(container) AND record_type = \(recordType) AND field = \(field)")
            return
        }
        guard try !fetch("SELECT 1 FROM schema_types WHERE container_id = \(container) AND record_type = \(recordType)").isEmpty else { return }
        try run("""
            INSERT INTO schema_fields(container_id, record_type, field, type, \(raw: column)) VALUES (\(container), \(recordType), \(field), \(type.rawValue), \(true))
            ON CONFLICT (container_id, record_type, field) DO UPDATE SET \(raw: column) = \(true)
            """)
    }

    public func addSchemaType(_ recordType: String, grants: [SchemaGrant], inContainer container: Int64) throws {
        guard try run("INSERT INTO schema_types(container_id, record_type) VALUES (\(container), \(recordType)) ON CONFLICT DO NOTHING") > 0 else { return }
        for grant in grants {
            try run("""
                INSERT INTO schema_grants(container_id, record_type, grantee, permissions)
                VALUES (\(container), \(recordType), \(grant.grantee), \(Self.bits(grant.permissions)))
                """)
        }
    }

    public func storedSchema(inContainer container: Int64) throws -> CloudKitSchema {
        var types: [String: SchemaRecordType] = [:]
        for row in try fetch("SELECT record_type FROM schema_types WHERE container_id = \(container)") {
            let name = try row.string(0)
            types[name] = SchemaRecordType(name: name)
        }
        for row in try fetch("SELECT record_type, field, type, queryable, sortable, searchable, encrypted FROM schema_fields WHERE container_id = \(container)") {
            guard let type = FieldType(rawValue: try row.string(2)) else { continue }
            let recordType = try row.string(0)
            types[recordType, default: SchemaRecordType(name: recordType)].fields.append(SchemaField(
                name: try row.string(1), type: type, encrypted: try row.bool(6), queryable: try row.bool(3), sortable: try row.bool(4), searchable: try row.bool(5)))
        }
        for (recordType, grants) in try grants(inContainer: container) {
            types[recordType, default: SchemaRecordType(name: recordType)].grants += grants
        }
        // Every type has every system field; rows hold only those marked.
        for (name, type) in types {
            for system in SchemaField.systemFields where type.field(system.name) == nil {
                types[name]!.fields.append(SchemaField(name: system.name, type: system.type))
            }
        }
        let roles = try fetch("SELECT role FROM schema_roles WHERE container_id = \(container)").map { try $0.string(0) }
        return CloudKitSchema(roles: roles, recordTypes: Array(types.values)).normalized()
    }

    public func replaceSchema(with schema: CloudKitSchema, inContainer container: Int64) throws {
        for table in ["schema_types", "schema_fields", "schema_grants", "schema_roles"] {
            try run("DELETE FROM \(raw: table) WHERE container_id = \(container)")
        }
        for role in schema.roles {
            try run("INSERT INTO schema_roles(container_id, role) VALUES (\(container), \(role))")
        }
        for type in schema.recordTypes {
            try run("INSERT INTO schema_types(container_id, record_type) VALUES (\(container), \(type.name))")
            for field in type.fields where !field.isSystem || field.queryable || field.sortable || field.searchable {
                try run("""
                    INSERT INTO schema_fields(container_id, record_type, field, type, queryable, sortable, searchable, encrypted)
                    VALUES (\(container), \(type.name), \(field.name), \(field.type.rawValue), \(field.queryable), \(field.sortable), \(field.searchable), \(field.encrypted))
                    """)
            }
            for grant in CloudKitSchema(recordTypes: [type]).normalized().recordTypes[0].grants {
                try run("""
                    INSERT INTO schema_grants(container_id, record_type, grantee, permissions)
                    VALUES (\(container), \(type.name), \(grant.grantee), \(Self.bits(grant.permissions)))
                    """)
            }
        }
        try run("DELETE FROM user_roles WHERE container_id = \(container) AND role NOT IN (SELECT role FROM schema_roles WHERE container_id = \(container))")
    }

    public func grants(inContainer container: Int64) throws -> [String: [SchemaGrant]] {
        var grants: [String: [SchemaGrant]] = [:]
        for row in try fetch("SELECT record_type, grantee, permissions FROM schema_grants WHERE container_id = \(container)") {
            let bits = try row.int64(2)
            grants[try row.string(0), default: []].append(SchemaGrant(permissions: SchemaPermission.allCases.filter { bits & Self.bits([$0]) != 0 },
                                                                      grantee: try row.string(1)))
        }
        return grants
    }

    public func usersWithRoles(_ users: [Int64], inContainer container: Int64) throws -> [(user: User, roles: Set<String>)] {
        guard !users.isEmpty else { return [] }
        var found: [Int64: (user: User, roles: Set<String>)] = [:]
        for row in try fetch("""
            SELECT u.id, u.name, u.record_name, r.role FROM users u LEFT JOIN user_roles r ON r.user_id = u.id AND r.container_id = \(container)
            WHERE \(SQLStatement.member("u.id", of: users, in: dialect))
            """) {
            let key = try row.int64(0)
            if found[key] == nil { found[key] = (User(id: key, name: try row.string(1), userRecordName: try row.string(2)), []) }
            if let role = try row.optionalString(3) { found[key]!.roles.insert(role) }
        }
        return found.keys.sorted().map { found[$0]! }
    }

    public func roleHolders(inContainer container: Int64) throws -> [(role: String, user: String)] {
        try fetch("""
            SELECT r.role, u.name FROM user_roles r JOIN users u ON u.id = r.user_id WHERE r.container_id = \(container) ORDER BY r.role, u.name
            """).map { (try $0.string(0), try $0.string(1)) }
    }

    public func setRole(_ role: String, held: Bool, byUser user: Int64, inContainer container: Int64) throws -> Bool {
        if held {
            return try run("INSERT INTO user_roles(container_id, user_id, role) VALUES (\(container), \(user), \(role)) ON CONFLICT DO NOTHING") > 0
        }
        return try run("DELETE FROM user_roles WHERE container_id = \(container) AND user_id = \(user) AND role = \(role)") > 0
    }

    public func isSchemaLocked(inContainer container: Int64) throws -> Bool {
        try fetch("SELECT schema_locked FROM containers WHERE id = \(container)").first?.bool(0) ?? false
    }

    public func setSchemaLocked(_ locked: Bool, inContainer container: Int64) throws {
        try run("UPDATE containers SET schema_locked = \(locked) WHERE id = \(container)")
    }

    public func ensureContainer(named name: String, environment: String) throws -> Int64 {
        // A production schema made after the schema lifecycle came takes only what is deployed
        // to it; those from before stay unlocked until their first deploy (the migration).
        try run("""
            INSERT INTO containers(name, environment, schema_locked) VALUES (\(name), \(environment), \(environment == "production"))
            ON CONFLICT DO NOTHING
            """)
        guard let key = try containerKey(named: name, environment: environment) else {
            throw StaleWrite("container \(name) vanished")
        }
        return key
    }

    public func appendSchemaHistory(_ entry: SchemaHistoryEntry, inContainer container: Int64) throws {
        try run("""
            INSERT INTO schema_history(container_id, at, operator, action, summary, schema)
            VALUES (\(container), \(entry.at), \(entry.operatorName), \(entry.action), \(entry.summary), \(entry.schema))
            """)
    }

    public func schemaHistory(ofContainer name: String, environment: String?, limit: Int) throws -> [SchemaHistoryEntry] {
        let inEnvironment: SQLStatement = environment.map { "AND c.environment = \($0)" } ?? ""
        return try fetch("""
            SELECT c.environment, h.at, h.operator, h.action, h.summary, h.schema FROM schema_history h JOIN containers c ON c.id = h.container_id
            WHERE c.name = \(name) \(inEnvironment) ORDER BY h.at DESC, h.id DESC LIMIT \(limit)
            """).map {
            SchemaHistoryEntry(environment: try $0.string(0), at: try $0.int64(1), operatorName: try $0.string(2), action: try $0.string(3),
                               summary: try $0.string(4), schema: try $0.string(5))
        }
    }

    public func records(ofType recordType: String, holding field: String?, inContainer container: Int64, limit: Int) throws -> [SchemaRecordInUse] {
        var found: [SchemaRecordInUse] = []
        // A field's name appears quoted in the fields' JSON of every record holding it (the
        // LIKE only narrows: each candidate's fields are read).
        let holding: SQLStatement = field.map { "AND r.fields LIKE \("%\"" + $0 + "\"%")" } ?? ""
        let rows = try fetch("""
            SELECT d.kind, COALESCE(u.record_name, ''), z.name, r.name, r.fields, r.created_by FROM records r
            JOIN zones z ON z.id = r.zone_id JOIN databases d ON d.id = z.database_id LEFT JOIN users u ON u.id = d.owner_id AND d.kind = 'private'
            WHERE d.container_id = \(container) AND r.type = \(recordType) AND NOT z.deleted \(holding)
            ORDER BY d.kind, d.owner_id, z.name, r.name
            """)
        for row in rows {
            if let field {
                guard case .object(let members)? = try? JSONValueDecoder().decode(JSONValue.self, from: Data(try row.string(4).utf8)),
                      members[field] != nil else { continue }
            }
            found.append(SchemaRecordInUse(database: try row.string(0), owner: try row.string(1), zoneName: try row.string(2),
                                           recordName: try row.string(3), recordType: recordType, creator: try row.string(5)))
            if found.count >= limit { break }
        }
        return found
    }

    static func bits(_ permissions: [SchemaPermission]) -> Int64 {
        permissions.reduce(0) { bits, permission in
            bits | (permission == .create ? SchemaPermissionBits.create : permission == .read ? SchemaPermissionBits.read : SchemaPermissionBits.write)
        }
    }
}
