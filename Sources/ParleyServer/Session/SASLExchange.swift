import ParleyCore

/// The state of one SASL exchange on a connection (RFC 6120 §6.4).
enum SASLExchange {
    /// SCRAM, waiting for the client-first message (sent after an empty challenge).
    case scramAwaitingClientFirst(SCRAMServer)
    /// SCRAM, server-first sent, waiting for client-final.
    case scramAwaitingClientFinal(SCRAMServer, username: String)
    /// PLAIN without an initial response: waiting for it after an empty challenge.
    case plainAwaitingResponse
    /// `<success/>` was sent; nothing more is expected.
    case done
}
