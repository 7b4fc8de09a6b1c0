import ArgumentParser
import Foundation
import RecordClient

/// `recordctl subscriptions list|create|delete|watch`.
struct SubscriptionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscriptions",
        abstract: "Manage subscriptions and watch the notifications they make.",
        subcommands: [List.self, Create.self, Delete.self, Watch.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List your subscriptions of the database.")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await reportingErrors {
                for subscription in try await connection.makeDatabase().subscriptions() {
                    if connection.json {
                        Console.line(String(decoding: try JSONValueEncoder().encode(subscription), as: UTF8.self))
                    } else {
                        let what = switch subscription.subscriptionType {
                        case "zone": "zone \(subscription.zoneID?.zoneName ?? ZoneID.defaultZoneName)"
                        case "database": "every zone"
                        default: "\(subscription.query?.recordType ?? "?") \((subscription.firesOn ?? []).joined(separator: ","))\(subscription.firesOnce == true ? " once" : "")"
                        }
                        Console.line("\(subscription.subscriptionID)\t\(subscription.subscriptionType ?? "?")\t\(what)")
                    }
                }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Subscribe to records of a type (with --where), to every change of the zone (--zone-subscription) or of the database (--database-subscription, the shared database's only kind).",
            discussion: "Example: recordctl subscriptions create new-art --record-type Artwork --where \"year > 1900\" --fires-on create,update"
        )
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var zone: ZoneOption
        @Argument(help: "The subscription's ID.") var id: String
        @Option(help: "The record type (a query subscription).") var recordType: String?
        @Option(name: .customLong("where"), help: "A predicate the records must match.") var predicate: String?
        @Option(help: "create, update and/or delete, comma-separated.") var firesOn = "create,update,delete"
        @Flag(help: "Remove the subscription once it has fired.") var once = false
        @Flag(help: "Fire on every change of the zone (a zone subscription).") var zoneSubscription = false
        @Flag(help: "A query subscription over every zone of the database.") var zoneWide = false
        @Flag(help: "Fire on every change of any zone of the database (a database subscription).") var databaseSubscription = false

        func validate() throws {
            if [zoneSubscription, databaseSubscription, recordType != nil].filter({ $0 }).count != 1 {
                throw ValidationError("give one of --record-type (a query subscription), --zone-subscription or --database-subscription")
            }
            if recordType == nil && predicate != nil { throw ValidationError("--where needs --record-type") }
        }

        func run() async throws {
            try await reportingErrors {
                let subscription: Subscription
                if let recordType {
                    let filters = try predicate.map { try RecordPredicate(format: $0).filters } ?? []
                    subscription = Subscription(subscriptionID: id, subscriptionType: "query", query: Query(recordType: recordType, filterBy: filters),
                                                zoneID: zoneWide ? nil : zone.zoneID, firesOn: firesOn.split(separator: ",").map(String.init),
                                                firesOnce: once, zoneWide: zoneWide)
                } else if databaseSubscription {
                    subscription = .database(id)
                } else {
                    subscription = .zone(id, zone.zoneID)
                }
                let saved = try await connection.makeDatabase().save(subscription)
                Console.line(saved.subscriptionID)
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete subscriptions.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Subscription IDs.") var ids: [String]

        func run() async throws {
            try await reportingErrors {
                let database = try connection.makeDatabase()
                for id in ids { try await database.deleteSubscription(withID: id) }
            }
        }
    }

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print each notification your subscriptions make from now on, one JSON line each, until interrupted.",
            discussion: "A line \"watching\" on standard error says the watch has begun."
        )
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Stop after this many notifications.") var count: Int?

        func run() async throws {
            try await reportingErrors {
                var seen = 0
                let notifications = try await connection.makeDatabase().remoteNotifications()
                Console.error("watching")
                for try await notification in notifications {
                    Console.line(try notification.payload.serializedString())
                    seen += 1
                    if let count, seen >= count { return }
                }
            }
        }
    }
}
