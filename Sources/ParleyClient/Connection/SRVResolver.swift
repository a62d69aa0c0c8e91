import CResolv
import Dispatch

/// Looks up where a domain's XMPP service runs (RFC 6120 §3.2.1): `_xmpp-client._tcp` for
/// STARTTLS, `_xmpps-client._tcp` for direct TLS (XEP-0368). The lookup blocks, so it runs on
/// a dispatch queue, never on an event loop or the cooperative pool.
enum SRVResolver {
    static func lookup(service: String, domain: String) async -> [SRVRecord] {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: query("\(service).\(domain)"))
            }
        }
    }

    private static func query(_ name: String) -> [SRVRecord] {
        var answer = [UInt8](repeating: 0, count: 4096)
        let length = answer.withUnsafeMutableBufferPointer { buffer in
            parley_res_query(name, 1 /* IN */, 33 /* SRV */, buffer.baseAddress, Int32(buffer.count))
        }
        guard length > 0 else { return [] }
        return SRVRecord.ordered(SRVRecord.parse(response: Array(answer.prefix(Int(length)))) ?? [])
    }
}
