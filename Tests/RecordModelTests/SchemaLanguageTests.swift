import Foundation
import PropertyBased
import RecordModel
import Testing

/// CloudKit's schema language (`.ckdb`): files as `cktool export-schema` writes them (one of an
/// app's own types, one NSPersistentCloudKitContainer generated) and one kept by hand, read and
/// written back; generated schemas round-trip; malformed files are refused naming where and what
/// was expected.
@Suite struct SchemaLanguageTests {
    /// As `cktool export-schema` writes an app's schema (CLOUDKIT-REFERENCE.md, section 9).
    static let exported = """
        DEFINE SCHEMA

            CREATE ROLE editors;

            RECORD TYPE Article (
                "___createTime" TIMESTAMP,
                "___createdBy"  REFERENCE,
                "___etag"       STRING,
                "___modTime"    TIMESTAMP,
                "___modifiedBy" REFERENCE,
                "___recordID"   REFERENCE QUERYABLE,
                body            BYTES,
                cover           ASSET,
                tags            LIST<STRING>,
                title           STRING QUERYABLE SEARCHABLE SORTABLE,
                GRANT WRITE TO "_creator",
                GRANT CREATE TO "_icloud",
                GRANT READ TO "_world",
                GRANT CREATE, WRITE TO editors
            );

            RECORD TYPE Users (
                "___createTime" TIMESTAMP,
                "___createdBy"  REFERENCE,
                "___etag"       STRING,
                "___modTime"    TIMESTAMP,
                "___modifiedBy" REFERENCE,
                "___recordID"   REFERENCE,
                roles           LIST<INT64>,
                GRANT WRITE TO "_creator",
                GRANT READ TO "_world"
            );

        """

    /// As NSPersistentCloudKitContainer's schema exports: `CD_` names (before the system fields:
    /// fields are in byte order), `BYTES` (indexed, as SwiftData's Codable values are),
    /// `_ckAsset` fields, an encrypted list, grants of several permissions.
    static let coreData = """
        DEFINE SCHEMA

            RECORD TYPE CD_Note (
                CD_attachment         BYTES,
                CD_attachment_ckAsset ASSET,
                CD_body               STRING,
                CD_entityName         STRING QUERYABLE,
                CD_folder             STRING QUERYABLE,
                CD_moveReceipt        BYTES,
                CD_pinned             INT64 QUERYABLE SORTABLE,
                CD_secrets            LIST<ENCRYPTED STRING>,
                CD_tags               BYTES QUERYABLE SORTABLE,
                CD_timestamp          TIMESTAMP QUERYABLE SORTABLE,
                CD_title              STRING QUERYABLE SEARCHABLE SORTABLE,
                "___createTime"       TIMESTAMP QUERYABLE SORTABLE,
                "___createdBy"        REFERENCE,
                "___etag"             STRING,
                "___modTime"          TIMESTAMP QUERYABLE SORTABLE,
                "___modifiedBy"       REFERENCE,
                "___recordID"         REFERENCE QUERYABLE,
                GRANT READ, WRITE TO "_creator",
                GRANT READ, CREATE TO "_icloud",
                GRANT READ TO "_world"
            );

        """

    /// Kept by hand: comments of both kinds, names quoted where they need not be, grants split
    /// and out of order, RecordSync's extension types, encryption, a lower-case keyword.
    static let handKept = """
        // The gallery's schema, reviewed in pull requests.
        DEFINE SCHEMA
            -- moderators may edit anyone's artworks
            CREATE ROLE "moderators";
            create role curators;

            RECORD TYPE "Artwork" (
                title STRING QUERYABLE SORTABLE SEARCHABLE, // the words of the title are searched
                "year" INT64 SORTABLE QUERYABLE,
                artist REFERENCE QUERYABLE,
                place LOCATION QUERYABLE SORTABLE,
                notes ENCRYPTED STRING,
                "on-show" RECORDSYNC.BOOLEAN QUERYABLE,
                details RECORDSYNC.NESTED,
                flags LIST<RECORDSYNC.BOOLEAN>,
                GRANT READ TO "_world",
                GRANT WRITE TO moderators,
                GRANT CREATE TO moderators,
                GRANT WRITE TO "_creator",
                GRANT CREATE TO "_icloud"
            );
            RECORD TYPE "cloudkit.share" ( );
        """

    @Test func anExportedSchemaReadsAsItSaysAndWritesBackByteForByte() throws {
        let schema = try CloudKitSchema.read(Self.exported)
        #expect(schema.roles == ["editors"])
        #expect(schema.recordTypes.map(\.name) == ["Article", "Users"])
        let article = try #require(schema.recordType("Article"))
        #expect(article.fields.count == 10)
        #expect(article.field("title") == SchemaField(name: "title", type: FieldType(.string), queryable: true, sortable: true, searchable: true))
        #expect(article.field("tags")?.type == FieldType(.string, isList: true))
        #expect(article.field("cover")?.type == FieldType(.asset))
        #expect(article.field("___recordID")?.queryable == true && article.field("___recordID")?.isSystem == true)
        #expect(article.grants == [SchemaGrant(permissions: [.write], grantee: "_creator"), SchemaGrant(permissions: [.create], grantee: "_icloud"),
                                   SchemaGrant(permissions: [.read], grantee: "_world"), SchemaGrant(permissions: [.create, .write], grantee: "editors")])
        #expect(schema.written == Self.exported)
        #expect(try CloudKitSchema.read(schema.written) == schema)
    }

    @Test func nsPersistentCloudKitContainersSchemaRoundTrips() throws {
        let schema = try CloudKitSchema.read(Self.coreData)
        let note = try #require(schema.recordType("CD_Note"))
        #expect(note.field("CD_attachment_ckAsset")?.type == FieldType(.asset))
        #expect(note.field("CD_moveReceipt")?.type == FieldType(.bytes))
        #expect(note.field("CD_tags") == SchemaField(name: "CD_tags", type: FieldType(.bytes), queryable: true, sortable: true))
        #expect(note.field("CD_secrets") == SchemaField(name: "CD_secrets", type: FieldType(.string, isList: true), encrypted: true))
        #expect(note.grants.first == SchemaGrant(permissions: [.read, .write], grantee: "_creator"))
        #expect(note.fields.count == 17)
        #expect(schema.written == Self.coreData)
    }

    @Test func applesNumberTypeAndAnEncryptedListReadAsTheirTypes() throws {
        let schema = try CloudKitSchema.read("""
            DEFINE SCHEMA
                RECORD TYPE Reading (
                    value NUMBER PREFERRED AS DOUBLE QUERYABLE,
                    count NUMBER PREFERRED AS INT64,
                    notes ENCRYPTED LIST<STRING>
                );
            """)
        let reading = try #require(schema.recordType("Reading"))
        #expect(reading.field("value") == SchemaField(name: "value", type: FieldType(.double), queryable: true))
        #expect(reading.field("count")?.type == FieldType(.int64))
        #expect(reading.field("notes")?.encrypted == true)
        #expect(schema.written.contains("        notes LIST<ENCRYPTED STRING>,\n"), "\(schema.written)")
    }

    @Test func aHandKeptFileReadsAndIsWrittenInTheOneOrder() throws {
        let schema = try CloudKitSchema.read(Self.handKept)
        #expect(schema.roles == ["curators", "moderators"])
        let artwork = try #require(schema.recordType("Artwork"))
        #expect(artwork.field("on-show")?.type == FieldType(.boolean))
        #expect(artwork.field("details")?.type == FieldType(.nested))
        #expect(artwork.field("flags")?.type == FieldType(.boolean, isList: true))
        #expect(artwork.field("notes")?.encrypted == true)
        #expect(artwork.field("year") == SchemaField(name: "year", type: FieldType(.int64), queryable: true, sortable: true))
        #expect(artwork.grants.map(\.grantee) == ["_creator", "_icloud", "_world", "moderators"])
        #expect(artwork.grants.last?.permissions == [.create, .write])
        #expect(schema.recordType("cloudkit.share")?.fields == [])
        let written = schema.written
        #expect(written == """
            DEFINE SCHEMA

                CREATE ROLE curators;
                CREATE ROLE moderators;

                RECORD TYPE Artwork (
                    artist    REFERENCE QUERYABLE,
                    details   RECORDSYNC.NESTED,
                    flags     LIST<RECORDSYNC.BOOLEAN>,
                    notes     ENCRYPTED STRING,
                    "on-show" RECORDSYNC.BOOLEAN QUERYABLE,
                    place     LOCATION QUERYABLE SORTABLE,
                    title     STRING QUERYABLE SEARCHABLE SORTABLE,
                    year      INT64 QUERYABLE SORTABLE,
                    GRANT WRITE TO "_creator",
                    GRANT CREATE TO "_icloud",
                    GRANT READ TO "_world",
                    GRANT CREATE, WRITE TO moderators
                );

                RECORD TYPE "cloudkit.share" (
                );

            """, "\(written)")
        #expect(try CloudKitSchema.read(written) == schema)
    }

    @Test(arguments: [
        ("", 1, 1, "DEFINE", "the end of the file"),
        ("DEFINE SCHEMA\n  RECORD TYPE A (\n    title STRNG\n  );", 3, 11, "a field type", "'STRNG'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (title STRING,\n);", 3, 1, "a field's name or GRANT", "')'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (title STRING QUERYABLE QUERYABLE);", 2, 39, "QUERYABLE, SORTABLE, SEARCHABLE (each once)", "'QUERYABLE'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (title STRING)", 2, 29, "';'", "the end of the file"),
        ("DEFINE SCHEMA\nRECORD TYPE A (GRANT READ TO editors);", 2, 30, "a role the file creates", "'editors'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (GRANT DELETE TO \"_world\");", 2, 22, "CREATE, READ or WRITE", "'DELETE'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (a STRING, a INT64);", 2, 26, "a field not defined before", "'a'"),
        ("DEFINE SCHEMA\nRECORD TYPE A ();\nRECORD TYPE A ();", 3, 13, "a record type not defined before", "'A'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (tags LIST<LIST<STRING>>);", 2, 26, "a list's element type", "'LIST'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (n INT64 SEARCHABLE);", 2, 16, "SEARCHABLE on STRING", "'n'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (t ASSET SORTABLE);", 2, 16, "SORTABLE on a field that orders", "'t'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (b STRNG);\n#", 2, 18, "a field type", "'STRNG'"),
        ("\u{FEFF}DEFINE SCHEMA\nX", 2, 1, "CREATE ROLE, RECORD TYPE or the end of the file", "'X'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (n NUMBER PREFERRED AS STRING);", 2, 38, "INT64 or DOUBLE after NUMBER PREFERRED AS", "'STRING'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (r ENCRYPTED REFERENCE);", 2, 16, "a type that can be ENCRYPTED", "'r'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (s ENCRYPTED STRING QUERYABLE);", 2, 16, "no index on an ENCRYPTED field", "'s'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (\"___etag\" INT64);", 2, 16, "___etag as STRING", "\"___etag\""),
        ("DEFINE SCHEMA\nRECORD TYPE A (\"___other\" STRING);", 2, 16, "a system field", "\"___other\""),
        ("DEFINE SCHEMA\nRECORD TYPE A (\"open STRING);", 2, 16, "a closing '\"' on the same line", "a name left open"),
        ("DEFINE SCHEMA\nRECORD TYPE A (b RECORDSYNC.DATE);", 2, 29, "BOOLEAN or NESTED", "'DATE'"),
        ("DEFINE SCHEMA\nRECORD TYPE A (b STRING) # note", 2, 26, "a name, a keyword or one of ( ) , ; < >", "'#'"),
        ("DEFINE SCHEMA\nCREATE ROLE \"_world\";", 2, 13, "a role not created before", "\"_world\""),
        ("DEFINE SCHEMA\nDROP TYPE A;", 2, 1, "CREATE ROLE, RECORD TYPE or the end of the file", "'DROP'"),
    ])
    func aMalformedFileIsRefusedNamingWhereAndWhatWasExpected(_ text: String, _ line: Int, _ column: Int, _ expected: String, _ found: String) {
        do {
            let schema = try CloudKitSchema.read(text)
            Issue.record("read \(schema) from \(text)")
        } catch let error as SchemaSyntaxError {
            #expect(error.line == line && error.column == column, "\(error)")
            #expect(error.expected.contains(expected), "\(error)")
            #expect(error.found == found, "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }

    /// Generated schemas (swift-property-based): written and read back, the same schema;
    /// written twice, the same bytes.
    @Test func generatedSchemasRoundTrip() async {
        await propertyCheck(count: 300, input: Generator(run: { Self.schema(&$0) })) { schema in
            let written = schema.written
            let read = try? CloudKitSchema.read(written)
            #expect(read == schema.normalized(), "\(written)")
            #expect(read?.written == written)
        }
    }

    /// A schema of names that need quoting and names that do not, every type, random indexes
    /// and grants; only fields a file may hold.
    static func schema(_ rng: inout Arbitrary.RNG) -> CloudKitSchema {
        let names = ["a", "Title", "CD_x", "on-show", "grant", "_private", "cloudkit.share", "名前", "quote\"d", "1st", "x y", "e\u{301}", "𝐀", "कि", "😀"]
        let scalars: [ScalarType] = [.string, .int64, .double, .timestamp, .bytes, .reference, .location, .asset, .boolean, .nested]
        let roles = (0..<Int.random(in: 0...3, using: &rng)).map { "role\($0)" }
        var types: [SchemaRecordType] = []
        for typeName in names.shuffled(using: &rng).prefix(Int.random(in: 0...4, using: &rng)) {
            var fields: [SchemaField] = []
            for fieldName in names.shuffled(using: &rng).prefix(Int.random(in: 0...6, using: &rng)) {
                let field = SchemaField(name: fieldName, type: FieldType(scalars.randomElement(using: &rng)!, isList: Bool.random(using: &rng)),
                                        encrypted: Int.random(in: 0..<8, using: &rng) == 0, queryable: Bool.random(using: &rng),
                                        sortable: Bool.random(using: &rng), searchable: Bool.random(using: &rng))
                if reads(field) { fields.append(field) }
            }
            let grantees = SchemaGrant.builtInGrantees + roles
            let grants = (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                SchemaGrant(permissions: Array(SchemaPermission.allCases.shuffled(using: &rng).prefix(Int.random(in: 1...3, using: &rng))),
                            grantee: grantees.randomElement(using: &rng)!)
            }
            types.append(SchemaRecordType(name: typeName, fields: fields, grants: grants))
        }
        return CloudKitSchema(roles: roles, recordTypes: types)
    }

    /// Whether a field is one a file may hold (the reader's own rule, through a file).
    static func reads(_ field: SchemaField) -> Bool {
        (try? CloudKitSchema.read(CloudKitSchema(recordTypes: [SchemaRecordType(name: "T", fields: [field])]).written)) != nil
    }
}
