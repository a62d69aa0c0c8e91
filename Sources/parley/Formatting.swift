import Foundation
import ParleyClient
import ParleyCore

/// How contacts, messages and events look on the terminal (colour only on a TTY).
enum RosterFormat {
    /// "Bob Smith (bob@example.org)  friends", or "bob@example.org  friends" when the display
    /// name says nothing more than the JID.
    static func line(for contact: Contact, displayName: String? = nil) -> String {
        "\(named(contact.jid, displayName))  \(state(of: contact))"
    }

    /// "friends", or "not subscribed, request sent, waiting for an answer".
    static func state(of contact: Contact) -> String {
        let state: String
        switch contact.subscription {
        case .both: state = "friends"
        case .to: state = "you see them"
        case .from: state = "they see you"
        case .none: state = "not subscribed"
        }
        let pending = contact.awaitingApproval ? Terminal.paint(", request sent, waiting for an answer", .yellow) : ""
        return state + pending
    }

    /// A request waiting for the user's answer; `accept` is how to answer in this context
    /// ("parley accept" from a shell, "/accept" in the chat).
    static func line(for request: FriendRequest, accept: String) -> String {
        let note = request.message.map { ": \"\($0)\"" } ?? ""
        let line = "\(named(request.jid, request.nickname))  wants to be your friend\(note) — \(accept) \(request.jid)"
        return Terminal.paint(line, .magenta, bold: true)
    }

    /// The roster, then the requests waiting for an answer.
    static func lines(contacts: [Contact], requests: [FriendRequest], displayName: (JID) -> String, accept: String) -> [String] {
        let asking = Set(requests.map(\.jid))
        return requests.map { line(for: $0, accept: accept) }
            + contacts.filter { !asking.contains($0.jid) || $0.subscription != .none || $0.awaitingApproval }
            .map { line(for: $0, displayName: displayName($0.jid)) }
    }

    static func named(_ jid: JID, _ displayName: String?) -> String {
        guard let displayName, displayName != jid.localpart, displayName != jid.description else { return jid.description }
        return "\(displayName) (\(jid))"
    }
}

enum MessageFormat {
    static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = Calendar.current.isDateInToday(date) ? "HH:mm" : "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }

    static func historyLine(_ message: StoredMessage) -> String {
        let who = message.direction == .outgoing ? Terminal.paint("me", .blue) : Terminal.paint(message.peer.description, .green)
        if message.retracted { return "[\(time(message.timestamp))] \(who): \(Terminal.paint("(message recalled)", .gray))" }
        let state = message.direction == .outgoing ? Terminal.paint("  \(stateMark(message.state))", .gray) : ""
        return "[\(time(message.timestamp))] \(who): \(message.body)\(state)"
    }

    /// How far an outgoing message got: waiting here, on the server, on their device, seen.
    static func stateMark(_ state: StoredMessage.DeliveryState) -> String {
        switch state {
        case .pending: "… sending"
        case .sent: "✓ sent"
        case .delivered: "✓✓ delivered"
        case .read: "✓✓ read"
        }
    }

    /// One line for an event, or nil for those the chat does not show. `lookup` finds a
    /// message in the cache by id, for the events that only name one.
    /// `me` is the account's bare JID: a message from it was sent by another of its devices.
    static func line(for event: ClientEvent, me: JID? = nil, lookup: (String) async -> StoredMessage? = { _ in nil }) async -> String? {
        switch event {
        case .connecting:
            return Terminal.paint("connecting…", .gray)
        case .connected(let jid):
            return Terminal.paint("connected as \(jid)", .green)
        case .resumed:
            return Terminal.paint("reconnected; nothing was missed", .green)
        case .disconnected(.requested):
            return nil
        case .disconnected(let reason):
            return Terminal.paint("\(reason)", .yellow)
        case .reconnecting(let attempt, let delay):
            return Terminal.paint("reconnecting in \(seconds(delay)) (attempt \(attempt))…", .yellow)
        case .kicked(let reason):
            return Terminal.paint("signed out: \(reason)", .red, bold: true)
        case .message(let message) where message.from.bare == me:
            let to = message.to.map { " → \($0.bare)" } ?? ""
            return "[\(time(Date()))] \(Terminal.paint("me (another device)\(to)", .blue)): \(message.body)"
        case .message(let message):
            let late = message.delayedUntil.map { " (sent \(time($0)))" } ?? ""
            return "[\(time(Date()))] \(Terminal.paint(message.from.bare.description, .green, bold: true)): \(message.body)\(Terminal.paint(late, .gray))"
        case .sent(let id):
            return await stateLine(.sent, id, lookup)
        case .delivered(let id, _):
            return await stateLine(.delivered, id, lookup)
        case .displayed(let id, _):
            return await stateLine(.read, id, lookup)
        case .retracted(_, let peer, let bySelf):
            let who = bySelf ? "you" : peer.description
            let whom = bySelf ? " to \(peer)" : ""
            return "[\(time(Date()))] " + Terminal.paint("\(who) recalled a message\(whom) (message recalled)", .gray)
        case .presence(let update):
            let status = update.status.map { " — \($0)" } ?? ""
            return Terminal.paint("\(update.from.bare) is \(update.show.rawValue)\(status)", .gray)
        case .contactRequest(let from, let message):
            let note = message.map { ": \"\($0)\"" } ?? ""
            return Terminal.paint("\(from) wants to be friends\(note) — /accept \(from) or /decline \(from)", .magenta, bold: true)
        case .contactAccepted(let jid):
            return Terminal.paint("\(jid) accepted your request", .magenta)
        case .contactDeclined(let jid):
            return Terminal.paint("\(jid) declined your request", .magenta)
        case .contactRemoved(let jid):
            return Terminal.paint("\(jid) removed you", .magenta)
        case .rosterChanged:
            return nil
        case .contactProfileChanged(let jid):
            return jid == me ? nil : Terminal.paint("\(jid) updated their profile (/whois \(jid))", .gray)
        case .room(let event):
            return RoomFormat.line(for: event)
        case .transferProgress:
            return nil  // the command that started the transfer draws its progress bar
        case .stanzaError(_, let from, let error):
            let target = from.map { " (\($0))" } ?? ""
            return Terminal.paint("error\(target): \(error.text ?? error.condition.rawValue)", .red)
        }
    }

    /// "✓✓ delivered: “see you at 6”", for one of our messages.
    private static func stateLine(_ state: StoredMessage.DeliveryState, _ id: String, _ lookup: (String) async -> StoredMessage?) async -> String? {
        let body = await lookup(id).map { $0.retracted ? "(message recalled)" : "“\(preview($0.body))”" } ?? "message \(id)"
        return Terminal.paint("  \(stateMark(state)): \(body)", .gray)
    }

    static func preview(_ body: String) -> String {
        let line = body.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return line.count > 40 ? String(line.prefix(39)) + "…" : line
    }

    /// "4 s", or "0.5 s" for short delays.
    static func seconds(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        let value = Double(whole) + Double(fraction) / 1e18
        return value >= 1 ? "\(Int(value.rounded())) s" : String(format: "%.1f s", value)
    }
}

/// What the chat has shown of each sent message's way: a step is printed once, and only
/// forward (pending → sent → delivered → read), whatever order and how many times the
/// server's acknowledgement, receipts (one per device of the recipient) and markers arrive.
struct DeliveryProgress {
    private var shown: [String: StoredMessage.DeliveryState] = [:]

    /// False for a delivery step the screen already shows, or a smaller one.
    mutating func isNews(_ event: ClientEvent) -> Bool {
        let step: (String, StoredMessage.DeliveryState)
        switch event {
        case .sent(let id): step = (id, .sent)
        case .delivered(let id, _): step = (id, .delivered)
        case .displayed(let id, _): step = (id, .read)
        default: return true
        }
        if let before = shown[step.0], before >= step.1 { return false }
        shown[step.0] = step.1
        return true
    }
}
