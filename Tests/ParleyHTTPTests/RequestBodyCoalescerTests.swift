import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import ParleyHTTP

/// The body parts of one read reach the route as one part, in order, and nothing else changes.
@Suite("Request body coalescing")
struct RequestBodyCoalescerTests {
    @Test func partsOfOneReadAreJoinedAndHeadAndEndPassThrough() throws {
        let channel = EmbeddedChannel(handler: RequestBodyCoalescer(limit: 10))
        let head = HTTPRequest(method: .put, scheme: "https", authority: "example.test", path: "/upload/a/b")
        try channel.writeInbound(HTTPRequestPart.head(head))
        // One read: three parts, then the read completes.
        for text in ["abc", "def", "g"] {
            try channel.pipeline.syncOperations.fireChannelRead(NIOAny(HTTPRequestPart.body(ByteBuffer(string: text))))
        }
        channel.pipeline.syncOperations.fireChannelReadComplete()
        // Next read: one part alone passes as it is; past the limit a part is sent at once.
        try channel.pipeline.syncOperations.fireChannelRead(NIOAny(HTTPRequestPart.body(ByteBuffer(string: "hij"))))
        channel.pipeline.syncOperations.fireChannelReadComplete()
        for text in ["klmnop", "qrstu", "v"] {
            try channel.pipeline.syncOperations.fireChannelRead(NIOAny(HTTPRequestPart.body(ByteBuffer(string: text))))
        }
        try channel.writeInbound(HTTPRequestPart.end(nil))

        var parts: [String] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) {
            switch part {
            case .head(let request): parts.append("head \(request.path ?? "")")
            case .body(let buffer): parts.append(String(buffer: buffer))
            case .end: parts.append("end")
            }
        }
        #expect(parts == ["head /upload/a/b", "abcdefg", "hij", "klmnopqrstu", "v", "end"])
        _ = try channel.finish()
    }
}
