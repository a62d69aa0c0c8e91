import Logging
import ParleyCore
import ParleyHTTP
import ParleyMUC
import ParleyServer

/// The hosted services the configuration asks for, built here because ParleyServer does
/// not know them: it only routes to whatever `HostedService`s it is given.
func makeHostedServices(_ configuration: ServerConfiguration, logger: Logger) -> [any HostedService] {
    var services: [any HostedService] = []
    if configuration.muc.enabled {
        services.append(MUCService(settings: MUCService.Settings(configuration), logger: logger))
    }
    if let upload = makeUploadService(configuration) { services.append(upload) }
    return services
}

/// The XEP-0363 slot service, when the HTTP listener serves uploads; HTTPLauncher attaches the
/// slots once the listener runs.
func makeUploadService(_ configuration: ServerConfiguration) -> UploadService? {
    guard configuration.http.enabled, configuration.http.upload.enabled else { return nil }
    return UploadService(
        domain: configuration.uploadDomain, serverDomain: configuration.domain, maxFileSize: configuration.http.upload.maxFileSize)
}

extension MUCService.Settings {
    init(_ configuration: ServerConfiguration) {
        let creators: Set<JID>? =
            configuration.muc.roomCreation == .admins ? Set(configuration.muc.admins.compactMap { try? JID($0) }) : nil
        self.init(domain: configuration.mucDomain, serverDomain: configuration.domain, creators: creators)
        maxRooms = configuration.muc.maxRooms
        maxOccupantsPerRoom = configuration.muc.maxOccupantsPerRoom
        maxRoomsPerAccount = configuration.muc.maxRoomsPerAccount
        maxMessageBytes = configuration.muc.maxMessageBytes
        nicknames.maxBytes = configuration.muc.maxNickBytes
        nicknames.registration = configuration.muc.registration == .open ? .open : .affiliated
        nicknames.enforceRegistered = configuration.muc.enforceRegisteredNickname
        rateLimit = MUCRateLimit(
            messagesPerSecond: Double(configuration.muc.messagesPerMinute) / 60, burst: configuration.muc.messageBurst)
        archiveByDefault = configuration.muc.archiveByDefault
        archiveMaxMessagesPerRoom = configuration.muc.archiveMaxMessagesPerRoom
        archiveRetentionDays = configuration.muc.archiveRetentionDays
        maxVCardBytes = configuration.vCard.maxBytes
    }
}
