import Foundation
import RecordClient

/// The `assets` scenario: `assetCount` assets of `assetBytes` and one of `bigAssetBytes`,
/// uploaded (saving their records) and downloaded (`fetchAsset`) through the client against a
/// server process of its own, each way against a floor of the same bytes on this disk: written
/// with fsync (up), copied by a plain file copy (down), measured around each repetition. Also
/// the server's peak resident memory during the scenario over its idle resident memory.
enum AssetsScenario {
    static func run(_ scale: Scale, repetitions: Int, executable: URL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()) async throws -> Measurement {
        try await BenchStorage.with { storage in
            let sources = storage.directory + "/sources"
            try FileManager.default.createDirectory(atPath: sources, withIntermediateDirectories: true)
            var files: [URL] = []
            var generator = SystemRandomNumberGenerator()
            for index in 0...scale.assetCount {
                let size = index == scale.assetCount ? scale.bigAssetBytes : scale.assetBytes
                let url = URL(fileURLWithPath: "\(sources)/asset\(index).bin")
                var data = Data(count: size)
                let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
                data.withUnsafeMutableBytes { raw in
                    let words = raw.bindMemory(to: UInt64.self)
                    var state = seed
                    for i in words.indices { state = state &* 6364136223846793005 &+ 1442695040888963407; words[i] = state }
                }
                try data.write(to: url)
                files.append(url)
            }
            let total = Double(files.reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? NSNumber)?.doubleValue ?? 0) })

            let server = try await Memory.ServerProcess(storage, executable: executable, name: "assets-server")
            defer { server.stop() }
            let pid = server.process.processIdentifier
            var container = server.container
            container.maximumAssetBytes = Int64.max
            let database = container.privateCloudDatabase
            // Warm: the first request opens connections and creates the user's database.
            _ = try await database.modifyRecords(saving: [Record(recordType: "Warm", recordID: Record.ID(recordName: "warm"))], deleting: [])
            let idle = try Memory.statusBytes("VmRSS", of: pid)

            var up: [Double] = [], down: [Double] = [], upFloors: [Double] = [], downFloors: [Double] = []
            for repetition in 0..<repetitions {
                let floorDirectory = storage.directory + "/floor\(repetition)"
                try FileManager.default.createDirectory(atPath: floorDirectory, withIntermediateDirectories: true)
                upFloors.append(try await seconds { try writeWithFsync(files, into: floorDirectory) })
                let records = files.enumerated().map { index, file -> Record in
                    var record = Record(recordType: "Scan", recordID: Record.ID(recordName: "r\(repetition)-\(index)"))
                    record["file"] = Asset(fileURL: file).fieldValue
                    return record
                }
                up.append(try await seconds {
                    let (saved, _) = try await database.modifyRecords(saving: records, deleting: [])
                    guard saved.values.allSatisfy({ (try? $0.get()) != nil }) else { throw BenchError("an asset's record did not save") }
                })
                let fetched = try await database.records(for: records.map(\.recordID)).records
                container.assetDirectory = URL(fileURLWithPath: storage.directory + "/downloads\(repetition)")
                let downloader = container.privateCloudDatabase
                down.append(try await seconds {
                    for record in fetched {
                        guard let asset = record["file"]?.asset else { throw BenchError("no asset in \(record.recordName)") }
                        _ = try await downloader.fetchAsset(asset)
                    }
                })
                let copies = storage.directory + "/copies\(repetition)"
                try FileManager.default.createDirectory(atPath: copies, withIntermediateDirectories: true)
                downFloors.append(try await seconds {
                    for (index, file) in files.enumerated() {
                        try FileManager.default.copyItem(atPath: "\(floorDirectory)/\(file.lastPathComponent)", toPath: "\(copies)/\(index)")
                    }
                })
                for directory in [floorDirectory, copies, container.assetDirectory.path] { try? FileManager.default.removeItem(atPath: directory) }
            }
            let peak = try Memory.peakResidentBytes(of: pid)
            let upRatio = pairedRatio(upFloors, over: up), downRatio = pairedRatio(downFloors, over: down)
            let growth = Double(peak - idle) / 1_048_576
            let megabytes = total / 1_048_576
            return Measurement(scenario: "assets", unit: "MB/s up", figure: megabytes / median(up), floor: megabytes / median(upFloors),
                               ratio: min(upRatio, downRatio), target: "≥ 0.40 of floor both ways; RSS +≤ 30 MB",
                               met: upRatio >= 0.4 && downRatio >= 0.4 && growth <= 30,
                               notes: String(format: "up %.2f, down %.2f (%.0f MB/s, floor %.0f MB/s) of floor; server RSS %.0f MB idle, peak +%.1f MB; %.0f MB each way",
                                             upRatio, downRatio, megabytes / median(down), megabytes / median(downFloors),
                                             Double(idle) / 1_048_576, growth, megabytes))
        }
    }

    /// Writes each file's bytes to a new file in `directory`, each synced to disk.
    static func writeWithFsync(_ files: [URL], into directory: String) throws {
        for file in files {
            let data = try Data(contentsOf: file)
            let target = "\(directory)/\(file.lastPathComponent)"
            guard FileManager.default.createFile(atPath: target, contents: nil), let handle = FileHandle(forWritingAtPath: target) else {
                throw BenchError("cannot write \(target)")
            }
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try handle.close()
        }
    }
}
