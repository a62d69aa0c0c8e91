import ArgumentParser
import Foundation
import ParleyClient
import ParleyCore

/// Group chat (XEP-0045) in the interactive chat: the room commands, and how room events
/// look. A joined room can be the current conversation: plain lines then go to the room.
enum RoomCommands {
    static let help = """
        /join ROOM [NICK]    enter a room (ROOM or ROOM@service; a new one is created)
        /leave [ROOM]        leave the current room       /who          who is in the current room
        /topic [TEXT]        show or change its subject   /invite JID [reason]   invite JID to it
        /kick NICK [reason]  send NICK out                /ban JID [reason]      ban JID from it
        /rooms               rooms you are in, and the public rooms of your server
        """

    /// Handles a room command; false when `command` is not one.
    static func handle(_ command: String, _ argument: String?, _ rest: String?, client: ChatClient, current: inout JID?) async throws -> Bool {
        switch command {
        case "/join":
            guard let argument else { throw CLIError("usage: /join ROOM [NICK]", .usage) }
            let room = try await roomJID(argument, client)
            let account = await client.xmpp.configuration.jid
            let nick = rest ?? account.localpart ?? "me"
            let joined = try await client.join(room, nick: nick, history: RoomHistoryRequest(maxStanzas: 20))
            current = room
            try? await client.markRead(room)
            print(Terminal.paint("now talking in \(room) as \(joined.nick)", .gray))
        case "/leave":
            let room = try currentRoom(argument, current, await client.joinedRooms())
            try await client.leave(room)
            if current == room { current = nil }
        case "/who":
            let room = try currentRoom(nil, current, await client.joinedRooms())
            for occupant in try await client.occupants(of: room) { print(occupantLine(occupant)) }
        case "/topic":
            let room = try currentRoom(nil, current, await client.joinedRooms())
            let text = [argument, rest].compactMap { $0 }.joined(separator: " ")
            if text.isEmpty {
                let subject = await client.joinedRooms().first { $0.jid == room }?.subject
                print(Terminal.paint(subject.map { "topic of \(room): \($0)" } ?? "\(room) has no topic", .gray))
            } else {
                try await client.setSubject(of: room, to: text)
            }
        case "/invite":
            let room = try currentRoom(nil, current, await client.joinedRooms())
            guard let argument else { throw CLIError("usage: /invite JID [reason]", .usage) }
            let invitee = try parseJID(argument)
            try await client.invite(invitee, to: room, reason: rest)
            print(Terminal.paint("invited \(invitee) to \(room)", .gray))
        case "/kick":
            let room = try currentRoom(nil, current, await client.joinedRooms())
            guard let argument else { throw CLIError("usage: /kick NICK [reason]", .usage) }
            try await client.kick(argument, from: room, reason: rest)
        case "/ban":
            let room = try currentRoom(nil, current, await client.joinedRooms())
            guard let argument else { throw CLIError("usage: /ban JID [reason]", .usage) }
            let jid = try parseJID(argument)
            try await client.ban(jid, from: room, reason: rest)
            print(Terminal.paint("banned \(jid) from \(room)", .gray))
        case "/rooms":
            let joined = await client.joinedRooms()
            if joined.isEmpty { print(Terminal.paint("you are in no room: /join ROOM", .gray)) }
            for room in joined {
                print("\(room.jid) as \(room.nick), \(room.occupants.count) in the room" + (room.subject.map { " — \($0)" } ?? ""))
            }
            if let service = try await service(client) {
                let rooms = try await client.publicRooms(service: service)
                print(Terminal.paint("public rooms at \(service):" + (rooms.isEmpty ? " none" : ""), .gray))
                for room in rooms { print("  \(room.jid)" + (room.name.map { $0 == room.jid.localpart ? "" : "  \($0)" } ?? "")) }
            }
        default:
            return false
        }
        return true
    }

    /// A line typed while a room is the current conversation; false when it is not one.
    static func say(_ line: String, in current: JID?, client: ChatClient) async throws -> Bool {
        guard let current, await client.isInRoom(current) else { return false }
        try? await client.markRead(current)
        try await client.sendRoomMessage(to: current, body: line)
        return true
    }

    /// "team" means team@ the service our server has (or that of a room we are in).
    static func roomJID(_ text: String, _ client: ChatClient) async throws -> JID {
        if text.contains("@") { return try parseJID(text).bare }
        guard let service = try await service(client) else { throw CLIError("your server lists no group chat service; give the room as ROOM@service", .usage) }
        return try parseJID("\(text)@\(service)")
    }

    /// The service of a room we are in, else the one our server lists.
    private static func service(_ client: ChatClient) async throws -> JID? {
        if let room = await client.joinedRooms().first { return try JID(room.jid.domainpart) }
        return try await client.roomService()
    }

    private static func currentRoom(_ named: String?, _ current: JID?, _ joined: [JoinedRoom]) throws -> JID {
        if let named {
            let jid = try parseJID(named).bare
            if let room = joined.first(where: { $0.jid == jid || $0.jid.localpart == named }) { return room.jid }
            throw CLIError("you are not in \(named)", .usage)
        }
        guard let current, joined.contains(where: { $0.jid == current }) else {
            throw CLIError("no current room: /join ROOM first", .usage)
        }
        return current
    }

    static func occupantLine(_ occupant: RoomOccupant) -> String {
        let jid = occupant.realJID.map { " (\($0.bare))" } ?? ""
        let status = occupant.show == .available ? "" : ", \(occupant.show.rawValue)"
        return "\(occupant.nick)\(jid)  \(occupant.role.rawValue), \(occupant.affiliation.rawValue)\(status)"
    }
}

/// How room events look on the terminal.
enum RoomFormat {
    /// One line for a room event; `ownNick` (our nickname in that room) is highlighted
    /// where a message mentions it.
    static func line(for event: RoomEvent, ownNick: String? = nil) -> String? {
        let now = MessageFormat.time(Date())
        switch event {
        case .joined(let room):
            var line = "you joined \(room.jid) as \(room.nick)" + (room.created ? " (a new room)" : "") + ", \(room.occupants.count) in the room"
            if let subject = room.subject { line += " — topic: \(subject)" }
            return Terminal.paint(line, .green)
        case .rejoined(let room, let nick):
            return Terminal.paint("back in \(room) as \(nick)", .green)
        case .message(let message):
            let when = message.delayedUntil.map { MessageFormat.time($0) } ?? now
            let who = message.nick.map { Terminal.paint($0, message.isOwn ? .blue : .green, bold: true) } ?? Terminal.paint("(room)", .gray)
            let body = message.mentionsMe ? highlight(ownNick, in: message.body) : message.body
            return "[\(when)] \(Terminal.paint(message.room.description, .cyan)) \(who): \(body)"
        case .privateMessage(let message):
            let who = Terminal.paint("\(message.nick ?? "?") (private, \(message.room))", .magenta, bold: true)
            return "[\(now)] \(who): \(message.body)"
        case .occupantJoined(let room, let occupant):
            return Terminal.paint("\(occupant.nick) joined \(room)", .gray)
        case .occupantLeft(let room, let occupant, let removal):
            return Terminal.paint("\(occupant.nick) " + (removal.map { describe($0, you: false) } ?? "left") + " (\(room))", .gray)
        case .occupantChanged(let room, let occupant):
            return Terminal.paint("\(occupant.nick) is now \(occupant.role.rawValue), \(occupant.affiliation.rawValue) in \(room)", .gray)
        case .nickChanged(let room, let from, let to):
            return Terminal.paint("\(from) is now known as \(to) in \(room)", .gray)
        case .subjectChanged(let room, let subject, let by):
            return Terminal.paint((by.map { "\($0) set the topic of \(room): " } ?? "topic of \(room): ") + subject, .gray)
        case .invited(let invitation):
            let reason = invitation.reason.map { ": \"\($0)\"" } ?? ""
            return Terminal.paint("\(invitation.from) invites you to \(invitation.room)\(reason) — /join \(invitation.room)", .magenta, bold: true)
        case .invitationDeclined(let room, let by, let reason):
            return Terminal.paint("\(by) declined your invitation to \(room)" + (reason.map { ": \"\($0)\"" } ?? ""), .magenta)
        case .removed(let room, let removal):
            return Terminal.paint("you \(describe(removal, you: true)) (\(room))", .red, bold: true)
        case .left(let room):
            return Terminal.paint("you left \(room)", .gray)
        }
    }

    static func describe(_ removal: RoomRemoval, you: Bool) -> String {
        let were = you ? "were" : "was"
        func details(_ by: String?, _ reason: String?) -> String {
            (by.map { " by \($0)" } ?? "") + (reason.map { ": \($0)" } ?? "")
        }
        switch removal {
        case .kicked(let by, let reason): return were + " kicked" + details(by, reason)
        case .banned(let by, let reason): return were + " banned" + details(by, reason)
        case .affiliationChanged: return were + " removed: affiliation changed"
        case .membersOnly: return were + " removed: the room is now members-only"
        case .serviceShutdown: return were + " removed: the service is shutting down"
        case .destroyed(let reason, let venue):
            return were + " sent out: the room was destroyed" + (reason.map { ": \($0)" } ?? "") + (venue.map { " (moved to \($0))" } ?? "")
        }
    }

    /// The body with each mention of `nick` in bold yellow.
    static func highlight(_ nick: String?, in body: String) -> String {
        guard let nick, !nick.isEmpty else { return Terminal.paint(body, .yellow, bold: true) }
        var result = ""
        var rest = body[...]
        while let range = rest.range(of: nick, options: .caseInsensitive) {
            result += rest[..<range.lowerBound] + Terminal.paint(String(rest[range]), .yellow, bold: true)
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

/// `parley room …`: one-shot group chat commands for scripts.
struct RoomCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "room", abstract: "Group chat (XEP-0045) from scripts.", subcommands: [RoomSend.self])
}

struct RoomSend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "send", abstract: "Enter a room, say one thing, and leave.")
    @OptionGroup var account: AccountOptions
    @Option(help: "The nickname to use (default: your account's name).") var nick: String?
    @Argument(help: "The room's JID (room@service).") var room: String
    @Argument(help: "The message.") var text: String

    func run() async throws {
        let room = try parseJID(room).bare
        guard room.localpart != nil else { throw CLIError("a room is named room@service, not \(room)", .usage) }
        let id = try await account.withClient(online: true, priority: -1) { client in
            let account = await client.xmpp.configuration.jid
            let nick = nick ?? account.localpart ?? "parley"
            try await client.join(room, nick: nick, history: .none)
            let id = try await client.sendRoomMessage(to: room, body: text)
            try await client.settle()
            try await client.leave(room)
            return id
        }
        print("sent \(id) to \(room)")
    }
}
