// The model types (Record, Record.ID, Record.Reference, RecordZone, RecordSyncError, …) are part
// of the client's API.
@_exported import RecordModel
