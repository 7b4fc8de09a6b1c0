import ArgumentParser
import Foundation
import RecordClient

/// `recordctl share create|list|show|accept|remove-participant|delete`.
struct ShareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share", abstract: "Share a record (with the records below it) or a zone, and accept shares.",
        discussion: """
            The owner works in the private database (the default); a participant's shared zones are
            in the shared database (--database shared, each zone with --owner):
              recordctl share create --zone Lists --record groceries --invite _4ad2…:read-write --invite carol@example.com:read-only
              recordctl share accept https://example.com/share/4XK…      (as the participant)
              recordctl zones list --database shared
            """,
        subcommands: [Create.self, List.self, Show.self, Accept.self, RemoveParticipant.self, Delete.self]
    )

    /// `NAME:PERMISSION`, NAME a user record name or an email address.
    static func invitation(_ text: String) throws -> ShareParticipant {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, let permission = permission(parts[1]), permission != .none else {
            throw UsageError("--invite takes USER-RECORD-NAME:PERMISSION or EMAIL:PERMISSION, PERMISSION read-only or read-write, not '\(text)'")
        }
        return parts[0].contains("@") ? .email(parts[0], permission: permission) : .user(parts[0], permission: permission)
    }

    /// `none`, `read-only` or `read-write` (CloudKit's spellings too).
    static func permission(_ text: String) -> SharePermission? {
        switch text.lowercased().replacingOccurrences(of: "_", with: "-") {
        case "none": SharePermission.none
        case "read-only", "readonly": .readOnly
        case "read-write", "readwrite": .readWrite
        default: nil
        }
    }

    /// Prints a share: its record as JSON with `--json`, else a summary and its participants.
    static func print(_ share: Share, record: Record?, json: Bool) {
        if json, let record {
            Console.line(Rendering.json(record))
            return
        }
        Console.line("share \(share.recordID.recordName) of " + (share.isZoneShare ? "zone \(share.recordID.zoneID.zoneName)" : share.rootRecordName.map { "record \($0)" } ?? "a record"))
        if let title = share.title { Console.line("title: \(title)") }
        Console.line("url: \(share.url?.absoluteString ?? share.shortGUID ?? "-")")
        Console.line("public: \(share.publicPermission.rawValue)")
        if let owner = share.owner?.userIdentity?.userRecordName { Console.line("owner: \(owner)") }
        var rows: [[String]] = []
        for participant in share.participants {
            let identity = participant.userIdentity
            rows.append([identity?.lookupInfo?.emailAddress ?? identity?.userRecordName ?? identity?.lookupInfo?.userRecordName ?? "?",
                         participant.type?.rawValue ?? "", participant.permission?.rawValue ?? "", participant.acceptanceStatus?.rawValue ?? ""])
        }
        Rendering.table(["participant", "type", "permission", "status"], rows)
    }

    /// The share record `name` of the zone, and the share it describes.
    static func fetch(_ name: String, zone: ZoneID, from database: Database) async throws -> (Share, Record) {
        let record = try await database.record(for: Record.ID(recordName: name, zoneID: zone))
        guard let share = Share(record) else {
            throw RecordSyncError(.badRequest, "record \(NameRules.quoted(name)) is a \(record.recordType), not a share")
        }
        return (share, record)
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Share a record and the records below it (--record), or the whole zone.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var zone: ZoneOption
        @Option(help: "The root record to share (without it, the whole zone is shared).") var record: String?
        @Option(help: "The share record's name (a record share; a new UUID by default).") var name: String?
        @Option(help: "The share's title.") var title: String?
        @Option(name: .customLong("public"), help: "What anyone with the URL may do: none, read-only or read-write.") var publicPermission = "none"
        @Option(help: "Invite USER-RECORD-NAME:PERMISSION or EMAIL:PERMISSION (read-only or read-write). Repeatable.") var invite: [String] = []

        func run() async throws {
            try await reportingErrors {
                guard let permission = ShareCommand.permission(publicPermission) else {
                    throw UsageError("--public must be none, read-only or read-write, not '\(publicPermission)'")
                }
                if name != nil && record == nil { throw UsageError("--name names a record share's record: give --record too") }
                var share = record.map { Share(rootRecord: Record(recordType: "", recordID: Record.ID(recordName: $0, zoneID: zone.zoneID)), recordName: name ?? UUID().uuidString) }
                    ?? Share(recordZoneID: zone.zoneID)
                share.title = title
                share.publicPermission = permission
                share.participants = try invite.map(ShareCommand.invitation)
                let saved = try await connection.makeDatabase().save(share)
                if connection.json {
                    let (_, stored) = try await ShareCommand.fetch(saved.recordID.recordName, zone: zone.zoneID, from: try connection.makeDatabase())
                    Console.line(Rendering.json(stored))
                } else {
                    Console.line(saved.url?.absoluteString ?? saved.shortGUID ?? "")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the shares of the database's zones (in the shared database, those shared with you).")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await reportingErrors {
                let database = try connection.makeDatabase()
                var rows: [[String]] = []
                for zone in try await database.allRecordZones() where zone.zoneID.zoneName != ZoneID.defaultZoneName {
                    var token: ServerChangeToken?
                    repeat {
                        let page = try await database.recordZoneChanges(inZoneWith: zone.zoneID, since: token)
                        for record in page.modifications where ShareInfo.recordTypes.contains(record.recordType) {
                            guard let share = Share(record) else { continue }
                            if connection.json {
                                Console.line(Rendering.json(record))
                            } else {
                                rows.append([zone.zoneID.zoneName, zone.zoneID.ownerRecordName ?? "", share.recordID.recordName, share.publicPermission.rawValue,
                                             String(share.participants.count), share.url?.absoluteString ?? share.shortGUID ?? ""])
                            }
                        }
                        token = page.moreComing ? page.changeToken : nil
                    } while token != nil
                }
                if !connection.json { Rendering.table(["zone", "owner", "share", "public", "participants", "url"], rows) }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a share and its participants.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var zone: ZoneOption
        @Argument(help: "The share record's name (cloudkit.zoneshare for a zone's share).") var name: String

        func run() async throws {
            try await reportingErrors {
                let (share, record) = try await ShareCommand.fetch(name, zone: zone.zoneID, from: try connection.makeDatabase())
                ShareCommand.print(share, record: record, json: connection.json)
            }
        }
    }

    struct Accept: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Accept shares by URL or short GUID; each one's zone joins your shared database. Exit status 2 if any failed.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Share URLs or short GUIDs.") var urls: [String]

        func run() async throws {
            try await reportingErrors {
                var failures = 0
                for (url, result) in zip(urls, try await connection.makeContainer().acceptShares(urls)) {
                    switch result {
                    case .success(let metadata):
                        if connection.json {
                            Console.line(String(decoding: try JSONValueEncoder().encode(metadata), as: UTF8.self))
                        } else {
                            Console.line("accepted \(metadata.zoneID.zoneName) of \(metadata.zoneID.ownerRecordName ?? "?")"
                                         + (metadata.rootRecordName.map { " (record \($0))" } ?? " (the zone)") + ", \(metadata.participantPermission.rawValue)")
                        }
                    case .failure(let error):
                        failures += 1
                        Console.error("\(url): \(error.code.rawValue): \(error.reason)")
                    }
                }
                if failures > 0 { throw ExitCode(ExitStatus.partialFailure) }
            }
        }
    }

    struct RemoveParticipant: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove-participant", abstract: "Remove participants from a share (the owner).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var zone: ZoneOption
        @Argument(help: "The share record's name.") var name: String
        @Argument(help: "Participants: user record names, email addresses or participant IDs.") var participants: [String]

        func run() async throws {
            try await reportingErrors {
                let database = try connection.makeDatabase()
                var (share, _) = try await ShareCommand.fetch(name, zone: zone.zoneID, from: database)
                if share.publicPermission != .none {
                    throw UsageError("share \(name) has a public link: its participants came through it, and leave when it closes (--public none)")
                }
                let named = Set(participants.map { $0.lowercased() })
                let kept = share.participants.filter { participant in
                    let keys = [participant.participantId, participant.userIdentity?.userRecordName, participant.userIdentity?.lookupInfo?.userRecordName,
                                participant.userIdentity?.lookupInfo?.emailAddress].compactMap { $0?.lowercased() }
                    return named.isDisjoint(with: keys)
                }
                let removed = share.participants.count - kept.count
                guard removed > 0 else {
                    throw RecordSyncError(.notFound, "share \(NameRules.quoted(name)) has no participant \(participants.map(NameRules.quoted).joined(separator: ", "))")
                }
                share.participants = kept
                let saved = try await database.save(share)
                Console.line("removed \(removed) participant\(removed == 1 ? "" : "s"); \(saved.participants.count) left")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a share (the owner), or leave it (a participant, with --database shared).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var zone: ZoneOption
        @Argument(help: "The share record's name.") var name: String

        func run() async throws {
            try await reportingErrors {
                let database = try connection.makeDatabase()
                // Only a share record: any other name would delete a record, its cascade included.
                let (share, _) = try await ShareCommand.fetch(name, zone: zone.zoneID, from: database)
                try await database.delete(share)
                Console.line(database.scope == .shared ? "left \(name)" : "deleted \(name)")
            }
        }
    }
}
