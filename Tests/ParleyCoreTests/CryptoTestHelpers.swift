import ParleyCore

/// Bytes from a hex string such as "0c60c8…" (spaces allowed), for test vectors.
func hex(_ string: String) -> [UInt8] {
    let digits = Array(string.utf8.filter { $0 != UInt8(ascii: " ") })
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    return stride(from: 0, to: digits.count, by: 2).map { index in
        UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)!
    }
}

func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
