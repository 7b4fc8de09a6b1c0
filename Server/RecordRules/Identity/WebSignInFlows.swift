import Crypto
import Foundation
import RecordModel
import RecordStorage

/// Sign-ins through an identity provider under way on the web sign-in page (docs/protocol.md,
/// "The web sign-in page"), kept in the store so that any server of a cluster can finish what
/// another began.
extension RecordStore {
    /// How long a sign-in through a provider may take, from leaving for the provider to coming
    /// back.
    public static let signInFlowLifetime: Duration = .seconds(10 * 60)

    /// Keeps a sign-in under way (those older than ``signInFlowLifetime`` are forgotten).
    public func beginSignInFlow(_ flow: StoredSignInFlow) async throws {
        let forgetBefore = Self.now() - Self.signInFlowLifetime.components.seconds * 1000
        try await engine.write { transaction in
            try transaction.insertSignInFlow(flow, forgetBefore: forgetBefore)
            return .commit(())
        }
    }

    /// Takes the sign-in under way that `state` names: once (a second answer with the same state
    /// finds nothing), and only within ``signInFlowLifetime`` of its beginning.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` when there is none (never begun, finished already, or
    ///   too old).
    public func takeSignInFlow(state: String) async throws -> StoredSignInFlow {
        let hash = Data(SHA256.hash(data: Data(state.utf8)))
        let oldest = Self.now() - Self.signInFlowLifetime.components.seconds * 1000
        let flow = try await engine.write { transaction in .commit(try transaction.takeSignInFlow(stateHash: hash)) }
        guard let flow, flow.createdAt >= oldest else {
            throw RecordSyncError(.authenticationFailed, "this sign-in is unknown, finished already or over ten minutes old: begin it again")
        }
        return flow
    }
}
