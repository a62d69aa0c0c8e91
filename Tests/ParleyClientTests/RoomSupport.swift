import Foundation
import ParleyClient
import ParleyCore
import Testing

/// Helpers for the group chat scenarios (XEP-0045), against parleyd or Prosody.
enum Rooms {
    /// The room event the recorder saw next that `matches`.
    @discardableResult
    static func next(
        _ events: EventRecorder, _ what: String, within timeout: Duration = .seconds(10), where matches: @escaping @Sendable (RoomEvent) -> Bool
    ) async throws -> RoomEvent {
        let event = try await events.next(within: timeout, what) { if case .room(let event) = $0 { matches(event) } else { false } }
        guard case .room(let roomEvent) = event else { throw TimedOut(description: "not a room event: \(event)") }
        return roomEvent
    }

    /// The next room message with this body.
    @discardableResult
    static func message(_ events: EventRecorder, _ body: String, within timeout: Duration = .seconds(10)) async throws -> RoomMessage {
        let event = try await next(events, "the room message \"\(body)\"", within: timeout) {
            if case .message(let message) = $0 { message.body == body } else { false }
        }
        guard case .message(let message) = event else { throw TimedOut(description: "\(event)") }
        return message
    }

    /// The room messages with bodies the recorder saw, in order.
    static func bodies(_ events: EventRecorder, in room: JID) -> [String] {
        events.all.compactMap { if case .room(.message(let m)) = $0, m.room == room { m.body } else { nil } }
    }

    /// The refusal `body` threw, with its stanza error.
    static func refusal(_ body: () async throws -> Void) async -> StanzaError? {
        do {
            try await body()
            return nil
        } catch ClientError.refused(let error) {
            return error
        } catch {
            Issue.record("expected ClientError.refused, got \(error)")
            return nil
        }
    }
}
