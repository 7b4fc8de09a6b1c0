import RecordModel

// GRDB also has a `Record`; in this module `Record` is always the model's.
typealias Record = RecordModel.Record
