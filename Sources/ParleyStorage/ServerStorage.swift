/// Every store the server uses, as one backend provides them: the SQLite file by default,
/// PostgreSQL (ParleyPostgres) when configured. Both pass the same conformance suite.
public typealias ServerStorage = AccountStore & AccountChangeFeed & RosterStore & RosterChangeObserving & OfflineStore
    & ArchiveStore & BlockListStore & LastActivityStore & PEPStore & PrivateXMLStore & VCardStore & MUCRoomStore
    & MUCArchiveStore & UploadMetadataStore
