import GRDB

// The client's `Database` is a CloudKit database; GRDB's is a SQLite connection. Files that
// import GRDB also declare `private typealias Record = RecordModel.Record` (GRDB has a
// `Record` too) and spell it `RecordModel.Record` in public signatures.
typealias SQLDatabase = GRDB.Database
