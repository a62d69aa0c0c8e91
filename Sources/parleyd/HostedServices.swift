import Logging
import ParleyCore
import ParleyMUC
import ParleyServer

/// The hosted services the configuration asks for, built here because ParleyServer does
/// not know them: it only routes to whatever `HostedService`s it is given.
func makeHostedServices(_ configuration: ServerConfiguration, logger: Logger) -> [any HostedService] {
    var services: [any HostedService] = []
    if configuration.muc.enabled {
        services.append(MUCService(settings: MUCService.Settings(configuration), logger: logger))
    }
    return services
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
    }
}
