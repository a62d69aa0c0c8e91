import Foundation
import NIOConcurrencyHelpers
import ParleyCore
import ParleyServer

/// The XMPP side of HTTP File Upload (XEP-0363) at its own domain, such as `upload.example.org`:
/// it advertises the service and its size limit in disco#info and answers slot requests with
/// the URLs `UploadSlots` signs. The files themselves go over HTTP (`UploadFeature`).
///
/// The HTTP listener starts after the XMPP server (it needs the server's storage and
/// certificate), so the slots are attached once it runs; a request before that is told to wait.
public final class UploadService: HostedService {
    public static let namespace = "urn:xmpp:http:upload:0"

    public let domain: String
    public let name = "HTTP File Upload"
    /// The domain of the accounts that may upload.
    let serverDomain: String
    /// Advertised as `max-file-size`; the slots enforce the same configured limit.
    let maxFileSize: Int
    private let slots = NIOLockedValueBox<UploadSlots?>(nil)
    private let outlet = NIOLockedValueBox<HostedServiceOutlet?>(nil)

    public init(domain: String, serverDomain: String, maxFileSize: Int) {
        self.domain = domain
        self.serverDomain = serverDomain
        self.maxFileSize = maxFileSize
    }

    /// Slot requests are answered from now on.
    public func attach(_ slots: UploadSlots) {
        self.slots.withLockedValue { $0 = slots }
    }

    public func start(_ outlet: HostedServiceOutlet) async throws {
        self.outlet.withLockedValue { $0 = outlet }
    }

    public func sessionEnded(_ session: JID) {}

    public func receive(_ stanza: XMLElement, from sender: JID) {
        guard stanza.name == "iq" else {
            // A message bounces; presence and errors to a service without users get nothing.
            if stanza.name == "message" {
                refuse(stanza, StanzaError(.serviceUnavailable, text: "\(domain) only answers upload slot requests."))
            }
            return
        }
        guard stanza.type == "get" || stanza.type == "set" else { return }
        let to = stanza.to.flatMap { try? JID($0) }
        guard to?.localpart == nil, to?.resourcepart == nil else {
            return refuse(stanza, StanzaError(.serviceUnavailable, text: "There are no entities at \(domain)."))
        }
        guard let payload = stanza.elements.first, stanza.elements.count == 1 else {
            return refuse(stanza, StanzaError(.badRequest, text: "An iq get or set carries exactly one child element."))
        }
        switch (stanza.type, payload.name, payload.namespace) {
        case ("get", "query", XMLNamespace.discoInfo?):
            guard payload[attribute: "node"] == nil else {
                return refuse(stanza, StanzaError(.itemNotFound, text: "This service has no disco nodes."))
            }
            send(stanza.iqResult(info))
        case ("get", "query", XMLNamespace.discoItems?):
            send(stanza.iqResult(XMLElement("query", namespace: XMLNamespace.discoItems)))
        case ("get", "request", Self.namespace?):
            requestSlot(stanza, payload, from: sender)
        case (_, "request", Self.namespace?):
            refuse(stanza, StanzaError(.badRequest, text: "A slot request is an iq of type get."))
        case (_, "query", XMLNamespace.discoInfo?), (_, "query", XMLNamespace.discoItems?):
            refuse(stanza, StanzaError(.featureNotImplemented, text: "Service discovery is queried with iq get."))
        default:
            // RFC 6120 §8.4: a payload namespace the entity does not know.
            refuse(stanza, StanzaError(.serviceUnavailable, text: "\(domain) only answers disco and upload slot requests."))
        }
    }

    /// XEP-0363 §3 with the XEP-0128 form that carries the size limit.
    var info: XMLElement {
        func field(_ name: String, _ value: String) -> XMLElement {
            XMLElement("field", ["var": name], [XMLElement("value", text: value)])
        }
        var query = XMLElement("query", namespace: XMLNamespace.discoInfo)
        query.append(XMLElement("identity", ["category": "store", "type": "file", "name": name]))
        for feature in [XMLNamespace.discoInfo, XMLNamespace.discoItems, Self.namespace] {
            query.append(XMLElement("feature", ["var": feature]))
        }
        var formType = field("FORM_TYPE", Self.namespace)
        formType.setAttribute("type", "hidden")
        query.append(
            XMLElement(
                "x", namespace: XMLNamespace.dataForms, ["type": "result"], [formType, field("max-file-size", String(maxFileSize))]))
        return query
    }

    // MARK: Slots

    /// §4: the attributes are checked here; what depends on the account and its quota is
    /// `UploadSlots`'; when that needs the database (`makeSlot`), it runs off the event loop.
    private func requestSlot(_ stanza: XMLElement, _ request: XMLElement, from sender: JID) {
        guard sender.domainpart == serverDomain, let account = sender.localpart else {
            return refuse(stanza, StanzaError(.notAllowed, text: "Only accounts on \(serverDomain) may upload here."))
        }
        guard let filename = request[attribute: "filename"], !filename.isEmpty else {
            return refuse(stanza, StanzaError(.badRequest, text: "The request lacks its filename attribute."))
        }
        guard let sizeText = request[attribute: "size"] else {
            return refuse(stanza, StanzaError(.badRequest, text: "The request lacks its size attribute."))
        }
        guard let size = Int64(sizeText), size > 0 else {
            return refuse(stanza, StanzaError(.badRequest, text: "The size '\(sizeText)' is not a positive number of bytes."))
        }
        guard let slots = slots.withLockedValue({ $0 }) else {
            return refuse(
                stanza, StanzaError(.resourceConstraint, type: .wait, text: "The upload service is starting; try again shortly."))
        }
        let contentType = request[attribute: "content-type"]
        do throws(UploadSlotError) {
            // Most requests: the account's usage is cached, so the slot is made and answered
            // here, without a hop to another thread (which cost more than making the slot).
            if let slot = try slots.cachedSlot(account: account, filename: filename, size: size, contentType: contentType) {
                return send(stanza.iqResult(Self.element(slot)))
            }
        } catch {
            return refuse(stanza, Self.stanzaError(error))
        }
        Task {
            do throws(UploadSlotError) {
                let slot = try await slots.makeSlot(account: account, filename: filename, size: size, contentType: contentType)
                send(stanza.iqResult(Self.element(slot)))
            } catch {
                refuse(stanza, Self.stanzaError(error))
            }
        }
    }

    static func element(_ slot: UploadSlot) -> XMLElement {
        var put = XMLElement("put", namespace: namespace, ["url": slot.putURL])
        for header in slot.headers {
            put.append(XMLElement("header", namespace: namespace, ["name": header.name], text: header.value))
        }
        return XMLElement("slot", namespace: namespace, [:], [put, XMLElement("get", namespace: namespace, ["url": slot.getURL])])
    }

    /// §4.3's errors, each with a text a user can act on.
    static func stanzaError(_ error: UploadSlotError) -> StanzaError {
        switch error {
        case .fileTooLarge(let max):
            let condition = XMLElement(
                "file-too-large", namespace: namespace, [:], [XMLElement("max-file-size", namespace: namespace, text: String(max))])
            return StanzaError(
                .notAcceptable, type: .modify, text: "The file is larger than the \(max) bytes allowed.", applicationCondition: condition)
        case .quotaExceeded(let reason, let retryAfter):
            let retry = retryAfter.map {
                XMLElement("retry", namespace: namespace, ["stamp": ISO8601DateFormatter().string(from: $0)])
            }
            return StanzaError(.resourceConstraint, type: .wait, text: reason, applicationCondition: retry)
        case .notAllowed(let reason):
            return StanzaError(.notAllowed, type: .cancel, text: reason)
        case .badRequest(let reason):
            return StanzaError(.badRequest, type: .modify, text: reason)
        }
    }

    private func send(_ stanza: XMLElement) {
        outlet.withLockedValue { $0 }?.send(stanza)
    }

    private func refuse(_ stanza: XMLElement, _ error: StanzaError) {
        if let reply = stanza.errorReply(error) { send(reply) }
    }
}
