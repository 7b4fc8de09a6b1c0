// The fuzz targets: one harness for every parser of outside input. Each must never crash,
// whatever the bytes; where a parse succeeds, what it produced must hold together (round trips,
// two decoders agreeing, a body split anywhere read the same as whole, no INTERNAL_ERROR from the
// rules). A failed check ends the process (fatalError), as libFuzzer expects. libFuzzer drives
// them through Entry.swift; the main package's FuzzCorpusTests links this file and the targets'
// (not Entry.swift) and runs every seed of Fuzz/corpus through them.
import Foundation

enum FuzzTarget: String, CaseIterable {
    /// `JSONValue.parse`: any bytes; a parsed value serialises and parses back to itself.
    case json
    /// A `records/modify` body, as the server decodes it (`JSONValueDecoder`) and as the direct
    /// path does; both must agree when both accept it.
    case modify
    /// A `records/query` body (the query grammar: comparators, key paths, placeholders of
    /// values), then its filters planned against a schema as the cache would.
    case query
    /// `RecordPredicate(format:)`: the predicate format language.
    case predicate
    /// Zone and database change tokens and continuation markers from strings.
    case tokens
    /// gzip request bodies, inflated to at most 1 MiB.
    case gzip
    /// A `Range` header against a body size taken from the input.
    case range
    /// A `multipart/form-data` upload body, fed whole and split at points the input chooses:
    /// both must give the same file bytes, or both refuse it.
    case multipart
    /// Signed asset URLs: tokens verified against a real store's keys, and payloads the store
    /// signed itself read as upload and download grants.
    case signedurl
    /// Server-to-server signature headers (key ID, ISO 8601 date, SignatureV1) verified against
    /// a registered key, some signed by the harness so that valid ones and replays are reached.
    case signature
    /// Whole `records/modify` bodies through decoding, validation and the rules, against a real
    /// SQLite store: answers are results or documented errors, never INTERNAL_ERROR.
    case rules
    /// Stored field text written as a change page in the compact form (`recordSyncCompact`):
    /// never a crash; for text in the server's own form, the compact page with its repeats put
    /// back is the CloudKit page.
    case compact
    /// Signing in with an ID token: the body as the server decodes it (and writes back), and
    /// tokens as they come or claims the harness signs with its provider's key (every claim
    /// check reached): an identity, or `AUTHENTICATION_FAILED`, nothing else.
    case signin
    /// The bodies of built-in accounts (sign-up, verification, password sign-in, change, reset,
    /// deletion): each as the server decodes it (and writes back), then through the rules on a
    /// store of the run's own: an answer, or `BAD_REQUEST`, `AUTHENTICATION_FAILED`,
    /// `ACCESS_DENIED` or `THROTTLED`, nothing else.
    case accounts
    /// CloudKit's schema language (`.ckdb`): any text; a schema that reads is written back as
    /// text that reads as the same schema, and written twice as the same bytes.
    case schema
    /// What the web sign-in page reads from a browser and a provider: form bodies and queries
    /// (their fields encoded and read again are themselves), Sign in with Apple's `user` field
    /// (names within 255 bytes, or none), and API tokens' sign-in callbacks (accepted ones are
    /// `https`, or `http` to the machine itself, with no fragment).
    case websignin
    /// Sharing bodies through the rules, against a real SQLite store where one user shared a
    /// zone with another: the first byte `R` (resolve) or `A` (accept): a `records/resolve` or
    /// `records/accept` body by the participant; `S`: a `records/modify` body in the
    /// participant's shared database (the owner's zone named with its owner); anything else: a
    /// `records/modify` body in the owner's shared zone (share records with their keys):
    /// answers are results or documented errors, never INTERNAL_ERROR.
    case sharing
}

extension FuzzTarget {
    /// Runs the harness over one input.
    func run(_ data: Data) {
        switch self {
        case .json: fuzzJSON(data)
        case .modify: fuzzModify(data)
        case .query: fuzzQuery(data)
        case .predicate: fuzzPredicate(data)
        case .tokens: fuzzTokens(data)
        case .gzip: fuzzGzip(data)
        case .range: fuzzRange(data)
        case .multipart: fuzzMultipart(data)
        case .signedurl: fuzzSignedURL(data)
        case .signature: fuzzSignature(data)
        case .rules: fuzzRules(data)
        case .compact: fuzzCompact(data)
        case .signin: fuzzSignIn(data)
        case .accounts: fuzzAccounts(data)
        case .websignin: fuzzWebSignIn(data)
        case .schema: fuzzSchema(data)
        case .sharing: fuzzSharing(data)
        }
    }
}

/// Runs async work to its end from libFuzzer's synchronous callback.
func blocking<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let box = Box<T>()
    Task {
        box.value = await work()
        done.signal()
    }
    done.wait()
    return box.value!
}

final class Box<T>: @unchecked Sendable {
    var value: T?
}
