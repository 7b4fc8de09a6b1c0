import Foundation
import RecordModel

/// A security role of a container environment's schema and the users holding it.
public struct RoleHolders: Sendable, Hashable, Codable {
    /// The role (`CREATE ROLE`).
    public var role: String
    /// The names of the users holding it, by name.
    public var users: [String]
}

extension RecordStore {
    /// The roles of the schema of `container` in `environment` (`CREATE ROLE`), each with the
    /// users operators gave it, by role.
    public func roles(ofContainer container: String, environment: String) async throws -> [RoleHolders] {
        try await engine.read { transaction in
            guard let key = try transaction.containerKey(named: container, environment: environment) else { return [] }
            let holders = Dictionary(grouping: try transaction.roleHolders(inContainer: key), by: \.role).mapValues { $0.map(\.user) }
            return try transaction.storedSchema(inContainer: key).roles.sorted().map { RoleHolders(role: $0, users: holders[$0] ?? []) }
        }
    }

    /// Gives the user named `name` the role `role` of the schema of `container` in
    /// `environment` (`held`), or takes it. Only operators give roles (the operators' API,
    /// which records it in the audit log, and `recordserver role`): CloudKit keeps them in the `Users` record's `roles` field,
    /// which users never write.
    ///
    /// - Returns: whether anything changed (`false`: the user held it already, or did not).
    /// - Throws: `NOT_FOUND` for an unknown user; `BAD_REQUEST` for a role the schema lacks.
    @discardableResult
    public func setRole(_ role: String, held: Bool, user name: String, container: String, environment: String) async throws -> Bool {
        guard let user = try await self.user(named: name) else {
            throw RecordSyncError(.notFound, "there is no user \(NameRules.quoted(name))")
        }
        let changed = try await engine.write { transaction in
            guard let key = try transaction.containerKey(named: container, environment: environment),
                  try transaction.storedSchema(inContainer: key).roles.contains(role) else {
                throw RecordSyncError(.badRequest, "the schema of \(NameRules.quoted(container)) (\(environment)) has no role \(NameRules.quoted(role)); add it with CREATE ROLE")
            }
            let changed = try transaction.setRole(role, held: held, byUser: user.id, inContainer: key)
            return changed ? .commit(true) : .rollback(false)
        }
        accessInputs.forgetAll()
        return changed
    }
}
