import Foundation
import ParleyClient
import ParleyCore

/// Profiles, bookmarks and "who is this" for the chat's commands and the one-shot ones alike:
/// each returns the lines to print, or throws a `CLIError` of one line.
enum ProfileCommands {
    static func setAvatar(_ client: ChatClient, file: String) async throws -> [String] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw CLIError("cannot read \(file): \(error.localizedDescription)", .usage)
        }
        let id = try await run { try await client.setAvatar([UInt8](data)) }
        return ["avatar set (\(data.count) bytes, id \(id))"]
    }

    /// Writes `jid`'s avatar to `file` (default: JID.png/.jpg… in the current directory).
    static func getAvatar(_ client: ChatClient, of jid: JID, file: String?) async throws -> [String] {
        var avatar = await client.avatar(of: jid)
        if avatar == nil { avatar = try await run { try await client.fetchAvatar(of: jid) } }
        // No PEP avatar: perhaps a vCard photo (XEP-0153).
        if avatar == nil, let photo = try? await client.vCard(of: jid).photo {
            avatar = Avatar(hash: photo.hash, type: photo.type, data: photo.data)
        }
        guard let avatar else { throw CLIError("\(jid) has no avatar", .refused) }
        let path = file ?? "\(jid.bare).\(fileExtension(avatar.type))"
        do {
            try Data(avatar.data).write(to: URL(fileURLWithPath: path))
        } catch {
            throw CLIError("cannot write \(path): \(error.localizedDescription)", .usage)
        }
        return ["saved \(jid.bare)'s avatar to \(path) (\(avatar.type), \(avatar.data.count) bytes)"]
    }

    static func setNickname(_ client: ChatClient, _ nickname: String) async throws -> [String] {
        try await run { try await client.setNickname(nickname) }
        return ["nickname set to \(nickname)"]
    }

    /// Everything we can learn about `jid` cheaply: names, vCard, avatar, last seen, devices.
    static func whois(_ client: ChatClient, _ jid: JID) async throws -> [String] {
        let contact = jid.bare
        var lines = ["\(await client.displayName(for: contact)) (\(contact))"]
        let card: VCard? = try? await client.vCard(of: contact)
        let profile = await client.profile(of: contact)
        if let roster = await client.contacts().first(where: { $0.jid == contact }) {
            lines.append("  roster:     \(roster.name.map { "\"\($0)\", " } ?? "")\(RosterFormat.state(of: roster))")
        }
        if let nickname = profile?.nickname { lines.append("  nickname:   \(nickname)") }
        if let card {
            if let name = card.fullName { lines.append("  full name:  \(name)") }
            if let name = card.nickname { lines.append("  vCard nick: \(name)") }
            for email in card.emails { lines.append("  email:      \(email)") }
            if let url = card.url { lines.append("  url:        \(url)") }
            if let text = card.description { lines.append("  about:      \(text.replacingOccurrences(of: "\n", with: " "))") }
            if let birthday = card.birthday { lines.append("  birthday:   \(birthday)") }
        }
        if let avatar = await client.avatar(of: contact) {
            lines.append("  avatar:     \(avatar.hash) (\(avatar.type), \(avatar.data.count) bytes)")
        }
        let resources = await client.resources(of: contact)
        if resources.isEmpty {
            do {
                let last = try await client.lastActivity(of: contact)
                let status = last.status.map { " — \"\($0)\"" } ?? ""
                lines.append("  last seen:  \(duration(last.seconds)) ago\(status)")
            } catch {
                lines.append("  last seen:  unknown (\(error))")
            }
        }
        // Each device's software (XEP-0092), asked in parallel with a short timeout.
        let versions = await withTaskGroup(of: (JID, String?).self) { group in
            for resource in resources {
                group.addTask {
                    let version = try? await client.softwareVersion(of: resource.jid, timeout: .seconds(3))
                    return (resource.jid, version.map { [$0.name, $0.version, $0.os.map { "on \($0)" }].compactMap { $0 }.joined(separator: " ") })
                }
            }
            var found: [JID: String] = [:]
            for await (jid, text) in group { if let text, !text.isEmpty { found[jid] = text } }
            return found
        }
        for resource in resources {
            let show = resource.presence.show.rawValue
            let status = resource.presence.status.map { " — \($0)" } ?? ""
            let software = versions[resource.jid] ?? resource.capsNode ?? "unknown client"
            lines.append("  online:     \(resource.jid.resourcepart ?? "") (\(show)\(status)), \(software)")
        }
        return lines
    }

    /// `/bookmarks`, `/bookmarks add ROOM [name]`, `/bookmarks remove ROOM`.
    static func bookmarks(_ client: ChatClient, _ arguments: [String]) async throws -> [String] {
        switch arguments.first {
        case nil, "list":
            let bookmarks = try await run { try await client.bookmarks() }
            if bookmarks.isEmpty { return ["no bookmarks"] }
            return bookmarks.map { bookmark in
                var details: [String] = []
                if let nick = bookmark.nick { details.append("as \(nick)") }
                if bookmark.autojoin { details.append("autojoin") }
                if bookmark.password != nil { details.append("password") }
                let name = bookmark.name.map { "\($0) " } ?? ""
                return "\(name)\(bookmark.jid)" + (details.isEmpty ? "" : "  (\(details.joined(separator: ", ")))")
            }
        case "add":
            guard arguments.count >= 2 else { throw CLIError("usage: bookmarks add ROOM@SERVICE [name]", .usage) }
            let room = try parseJID(arguments[1])
            let name = arguments.count > 2 ? arguments[2...].joined(separator: " ") : nil
            try await run { try await client.addBookmark(Bookmark(jid: room, name: name, autojoin: true)) }
            return ["bookmarked \(room)"]
        case "remove":
            guard arguments.count == 2 else { throw CLIError("usage: bookmarks remove ROOM@SERVICE", .usage) }
            let room = try parseJID(arguments[1])
            guard try await run({ try await client.removeBookmark(room) }) else { throw CLIError("no bookmark for \(room)", .refused) }
            return ["removed the bookmark of \(room)"]
        default:
            throw CLIError("usage: bookmarks [list | add ROOM [name] | remove ROOM]", .usage)
        }
    }

    /// Library errors as one line each.
    private static func run<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ProfileError {
            if case .refused = error { throw CLIError(error.description, .refused) }
            throw CLIError(error.description, .usage)
        }
    }

    static func fileExtension(_ type: String) -> String {
        switch type {
        case "image/jpeg": "jpg"
        case "image/gif": "gif"
        case "image/webp": "webp"
        default: "png"
        }
    }

    /// "3 min", "2 h 5 min", "4 days".
    static func duration(_ seconds: Int) -> String {
        switch seconds {
        case ..<60: "\(seconds) s"
        case ..<3600: "\(seconds / 60) min"
        case ..<86400: "\(seconds / 3600) h \(seconds % 3600 / 60) min"
        default: "\(seconds / 86400) days"
        }
    }
}
