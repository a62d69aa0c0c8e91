import ParleyCore

/// The photo of a vCard as XEP-0153 identifies it: the SHA-1 of the image bytes, that is of
/// PHOTO/BINVAL once its base64 is decoded, in lowercase hex. Clients put this hash in their
/// presence (`<x xmlns='vcard-temp:x:update'><photo/>`); the server keeps it with the vCard.
public enum VCardPhoto {
    public enum Failure: Error, Equatable {
        case notBase64
        /// OpenSSL could not hash (it has no SHA-1): a fault of the server, not of the vCard.
        case digestUnavailable
    }

    /// nil when the vCard has no PHOTO with a BINVAL, or an empty one (an EXTVAL photo is a
    /// link, and XEP-0153 hashes only inline images).
    public static func hash(of vCard: XMLElement) throws(Failure) -> String? {
        guard let binval = vCard.firstChild("PHOTO", namespace: VCardModule.namespace)?
            .firstChild("BINVAL", namespace: VCardModule.namespace)
        else { return nil }
        // Base64 in vCards is routinely wrapped at 76 columns (RFC 2045 style).
        let compact = binval.text.utf8.filter { !Self.isWhitespace($0) }
        guard !compact.isEmpty else { return nil }
        let image: [UInt8]
        do {
            image = try Base64.decode(bytes: Array(compact))
        } catch {
            throw .notBase64
        }
        guard let digest = try? HashFunction.sha1.digest(image) else { throw .digestUnavailable }
        return hex(digest)
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}
