import Foundation
import Hummingbird
import NIOCore
import RecordModel
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The request context of every route: Hummingbird's basic one, and the address of the peer
/// the request came from (what sign-ins are throttled by).
struct RequestContextWithAddress: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// The proxies whose `X-Forwarded-For` the server believes (`--trusted-proxy`): addresses, or
/// networks written `ADDRESS/BITS`, IPv4 or IPv6.
public struct TrustedProxies: Sendable, Hashable {
    private var networks: [[UInt8]: Int] = [:]

    /// Reads each entry; throws naming the first that is neither an address nor a network.
    public init(_ entries: [String]) throws {
        for entry in entries {
            let parts = entry.split(separator: "/", maxSplits: 1).map(String.init)
            guard let bytes = parts.first.flatMap(Self.bytes(of:)) else {
                throw RecordSyncError(.badRequest, "the trusted proxy \(NameRules.quoted(entry)) is not an IP address or ADDRESS/BITS")
            }
            let bits = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
            guard let bits, (0...(bytes.count * 8)).contains(bits) else {
                throw RecordSyncError(.badRequest, "the trusted proxy \(NameRules.quoted(entry)) has a prefix length outside 0...\(bytes.count * 8)")
            }
            networks[Self.masked(bytes, bits)] = bits
        }
    }

    public var isEmpty: Bool { networks.isEmpty }

    /// Whether `address` (text) is one of the trusted proxies.
    func contains(_ address: String) -> Bool {
        guard let bytes = Self.bytes(of: address) else { return false }
        return networks.contains { network, bits in network.count == bytes.count && Self.masked(bytes, bits) == network }
    }

    /// The address of the client a request comes from: its peer's, unless the peer is a
    /// trusted proxy; then the right-most address of `X-Forwarded-For` that is not one.
    func client(of request: Request, peer: SocketAddress?) -> String? {
        guard var address = peer?.ipAddress else { return nil }
        guard contains(address) else { return address }
        let forwarded = request.headers[values: .init("X-Forwarded-For")!].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in forwarded.reversed() {
            guard Self.bytes(of: hop) != nil else { break }
            address = hop
            if !contains(hop) { break }
        }
        return address
    }

    /// The bytes of an IPv4 or IPv6 address in text, or `nil`.
    static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    private static func masked(_ bytes: [UInt8], _ bits: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let keep = max(0, min(8, bits - index * 8))
            return keep == 8 ? byte : byte & ~(UInt8(0xFF) >> keep)
        }
    }
}
