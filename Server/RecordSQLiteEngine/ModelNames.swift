import RecordModel

// GRDB also has a `Record`; inside the SQLite engine, `Record` is always the model's.
typealias Record = RecordModel.Record
