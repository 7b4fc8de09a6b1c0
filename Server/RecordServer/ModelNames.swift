import RecordModel

// GRDB also has a `Record`; inside the server, `Record` is always the model's.
typealias Record = RecordModel.Record
