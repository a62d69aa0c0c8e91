import ParleyCore

/// What the protocol layers ask the encoder to write on an XML stream.
public enum XMLStreamOutput: Sendable {
    /// Opens a stream (or re-opens it after STARTTLS or SASL).
    case open(StreamOpening)
    /// A stanza or stream-level element, written in the stream's namespace context.
    case element(XMLElement)
    /// A single space: RFC 6120 §4.6.1 whitespace keepalive.
    case whitespace
    /// `<stream:error>` followed by `</stream:stream>`: the stream is over (RFC 6120 §4.9.1.1).
    case error(StreamError)
    /// `</stream:stream>`.
    case close
}
