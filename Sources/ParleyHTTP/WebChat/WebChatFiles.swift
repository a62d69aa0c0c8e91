/// The web chat's files, compiled into the binary (`.embedInCode` in Package.swift).
///
/// Not a resource bundle: SwiftPM's `Bundle.module` on Linux looks for the bundle next to the
/// executable or in the build directory, and stops the process with a fatal error when neither
/// is there, which is what an installed `parleyd` would meet (measured with Swift 6.3.1).
struct WebChatFile: Sendable {
    let bytes: [UInt8]
    let contentType: String
    let etag: String

    init(_ bytes: [UInt8], _ contentType: String) {
        self.bytes = bytes
        self.contentType = contentType
        // FNV-1a of the content: the same file has the same tag across restarts and nodes.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        etag = "\"\(String(hash, radix: 16))\""
    }
}

enum WebChatFiles {
    static let all: [String: WebChatFile] = [
        "index.html": WebChatFile(PackageResources.index_html, "text/html; charset=utf-8"),
        "chat.css": WebChatFile(PackageResources.chat_css, "text/css; charset=utf-8"),
        "xml.js": WebChatFile(PackageResources.xml_js, "text/javascript; charset=utf-8"),
        "scram.js": WebChatFile(PackageResources.scram_js, "text/javascript; charset=utf-8"),
        "connection.js": WebChatFile(PackageResources.connection_js, "text/javascript; charset=utf-8"),
        "conversation.js": WebChatFile(PackageResources.conversation_js, "text/javascript; charset=utf-8"),
        "rooms.js": WebChatFile(PackageResources.rooms_js, "text/javascript; charset=utf-8"),
        "client.js": WebChatFile(PackageResources.client_js, "text/javascript; charset=utf-8"),
        "ui.js": WebChatFile(PackageResources.ui_js, "text/javascript; charset=utf-8"),
        "icon.svg": WebChatFile(PackageResources.icon_svg, "image/svg+xml"),
    ]
}
