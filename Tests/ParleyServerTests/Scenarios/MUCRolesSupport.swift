import ParleyCore
import Testing

/// Helpers for the scenarios of registration, voice requests, status codes and limits.
enum MUCRoles {
    static let register = "jabber:iq:register"
    static let registerForm = "http://jabber.org/protocol/muc#register"
    static let requestForm = "http://jabber.org/protocol/muc#request"
    static let admin = "http://jabber.org/protocol/muc#admin"

    /// A submitted `muc#register` form asking for `nick`.
    static func registration(_ nick: String, id: String, room: String = MUCScenarios.room) -> String {
        """
        <iq type='set' id='\(id)' to='\(room)'><query xmlns='\(register)'><x xmlns='jabber:x:data' type='submit'>\
        <field var='FORM_TYPE'><value>\(registerForm)</value></field>\
        <field var='muc#register_first'><value>Bob</value></field>\
        <field var='muc#register_roomnick'><value>\(nick)</value></field></x></query></iq>
        """
    }

    /// `client` (the owner, alone in the room) creates `team` configured with `fields` from
    /// the start, so no configuration change is announced.
    static func createRoom(_ client: TestClient, nick: String, fields: String) async throws {
        let entered = try await client.enter("team", nick: nick)
        #expect(entered.own.statusCodes == [110, 201])
        try await MUCAccessScenarios.configure(client, fields)
    }
}

extension TestClient {
    /// Sends a `muc#admin` set of `item` without reading the answer, which comes after the
    /// presence and messages the change causes.
    func sendAdmin(_ item: String, id: String, room: String = MUCScenarios.room) async throws {
        try await send("<iq type='set' id='\(id)' to='\(room)'><query xmlns='\(MUCRoles.admin)'>\(item)</query></iq>")
    }

    /// The next element must be the result of iq `id`.
    func expectResult(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let iq = try await expect("iq")
        #expect(iq.id == id && iq.type == "result", "got \(iq.xmlString())", sourceLocation: sourceLocation)
    }

    /// The next element must be a groupchat message from the room's own JID carrying
    /// exactly the status codes `codes` (a configuration change, §10.2.1).
    @discardableResult
    func expectRoomStatus(_ codes: [Int], room: String = MUCScenarios.room, sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> XMLElement
    {
        let message = try await expect("message")
        #expect(
            message.from == room && message.type == "groupchat" && message.statusCodes == codes && message.firstChild("body") == nil,
            "got \(message.xmlString())", sourceLocation: sourceLocation)
        return message
    }
}

extension XMLElement {
    /// The values of a data form's fields by name (the first value of each).
    var formValues: [String: String] {
        var values: [String: String] = [:]
        for field in children("field", namespace: "jabber:x:data") {
            guard let name = field[attribute: "var"] else { continue }
            values[name] = field.firstChild("value", namespace: "jabber:x:data")?.text ?? ""
        }
        return values
    }
}
