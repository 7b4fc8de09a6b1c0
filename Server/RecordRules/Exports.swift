// The rules' API speaks the storage protocol's types (a `RecordStore` is made over a
// `StorageEngine`, answers `User` and `Usage`): whoever imports the rules sees them.
@_exported import RecordStorage
