import Foundation
import ParleyCore

/// Discussion history (XEP-0045 §7.2.14): the room's last groupchat messages, sent to a
/// newcomer after the occupant list and before the subject, as much as its `<history/>` asks.
struct MUCHistory: Sendable {
    struct Entry: Sendable {
        /// The message as occupants got it, without `to`.
        var message: XMLElement
        var stamp: Date
        /// Its size as the `maxchars` limit counts it.
        var characters: Int
    }

    private(set) var entries: [Entry] = []

    mutating func append(_ message: XMLElement, limit: Int, at stamp: Date = Date()) {
        guard limit > 0 else { return }
        let characters = message.xmlString().utf8.count
        entries.append(Entry(message: message, stamp: stamp, characters: characters))
        if entries.count > limit { entries.removeFirst(entries.count - limit) }
    }

    /// What a newcomer gets for `request` (the `<history/>` of its join, nil: the default).
    func messages(for request: XMLElement?, now: Date = Date()) -> [Entry] {
        var selected = entries[...]
        if let value = request?[attribute: "maxstanzas"].flatMap(Int.init) {
            selected = selected.suffix(max(0, value))
        }
        if let seconds = request?[attribute: "seconds"].flatMap(Double.init) {
            selected = selected.drop { now.timeIntervalSince($0.stamp) > seconds }
        }
        if let since = request?[attribute: "since"].flatMap(Self.parse) {
            selected = selected.drop { $0.stamp < since }
        }
        if let maxChars = request?[attribute: "maxchars"].flatMap(Int.init) {
            var budget = maxChars
            var kept: [Entry] = []
            for entry in selected.reversed() {
                guard entry.characters <= budget else { break }
                budget -= entry.characters
                kept.append(entry)
            }
            return kept.reversed()
        }
        return Array(selected)
    }

    static func stamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    private static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}

extension MUCRoom {
    /// The history a newcomer's session gets, each message with a `<delay/>` from the room.
    func historyMessages(to session: JID, request: XMLElement?) -> [XMLElement] {
        history.messages(for: request).map { entry in
            var message = entry.message
            message.to = session.description
            message.append(XMLElement("delay", namespace: XMLNamespace.delay, ["from": jid.description, "stamp": MUCHistory.stamp(entry.stamp)]))
            return message
        }
    }
}
