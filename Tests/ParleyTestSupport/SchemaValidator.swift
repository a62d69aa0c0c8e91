import CLibXML2
import Foundation

/// Validates XML that Parley emits against the project's own XSDs in `schemas/`, with
/// libxml2's schema API. Every namespace that has a schema file is imported, so extension
/// payloads inside stanzas are checked too (the stanza schemas accept them laxly).
public final class SchemaValidator: @unchecked Sendable {
    public static let shared: SchemaValidator = {
        do {
            return try SchemaValidator(directory: SchemaValidator.schemaDirectory)
        } catch {
            fatalError("the schemas in \(SchemaValidator.schemaDirectory.path) do not compile: \(error)")
        }
    }()

    public static var schemaDirectory: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("schemas")
    }

    public struct Failure: Error, CustomStringConvertible {
        public var messages: [String]
        public var description: String { messages.joined(separator: "\n") }
    }

    private let schema: xmlSchemaPtr
    /// A compiled schema may be shared; validation contexts may not. Tests run in parallel.
    private let lock = NSLock()

    public init(directory: URL) throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".xsd") }.sorted()
        var imports = ""
        for file in files {
            let path = directory.appendingPathComponent(file).path
            let text = try String(contentsOfFile: path, encoding: .utf8)
            guard let range = text.range(of: "targetNamespace='"),
                let end = text[range.upperBound...].firstIndex(of: "'")
            else { continue }
            let namespace = text[range.upperBound..<end]
            imports += "<xs:import namespace='\(namespace)' schemaLocation='\(path)'/>\n"
        }
        let wrapper = "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>\n\(imports)</xs:schema>"
        var errors = ErrorCollector()
        let compiled: xmlSchemaPtr? = wrapper.withCString { pointer in
            guard let parserContext = xmlSchemaNewMemParserCtxt(pointer, Int32(strlen(pointer))) else { return nil }
            defer { xmlSchemaFreeParserCtxt(parserContext) }
            return withUnsafeMutablePointer(to: &errors) { collector in
                xmlSchemaSetParserStructuredErrors(parserContext, collectError, collector)
                return xmlSchemaParse(parserContext)
            }
        }
        guard let compiled else { throw Failure(messages: errors.messages) }
        schema = compiled
    }

    deinit { xmlSchemaFree(schema) }

    /// Throws with libxml2's messages if `xml` (one complete document: a stanza, or a whole
    /// stream from header to `</stream:stream>`) does not match the schemas.
    public func validate(_ xml: String) throws {
        lock.lock()
        defer { lock.unlock() }
        var errors = ErrorCollector()
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        let result: Int32 = xml.withCString { pointer in
            withUnsafeMutablePointer(to: &errors) { collector in
                guard let document = xmlReadMemory(pointer, Int32(strlen(pointer)), "emitted.xml", "UTF-8", options) else {
                    collector.pointee.messages.append("not well-formed XML")
                    return -1
                }
                defer { xmlFreeDoc(document) }
                guard let context = xmlSchemaNewValidCtxt(schema) else { return -1 }
                defer { xmlSchemaFreeValidCtxt(context) }
                xmlSchemaSetValidStructuredErrors(context, collectError, collector)
                return xmlSchemaValidateDoc(context, document)
            }
        }
        if result != 0 { throw Failure(messages: errors.messages.isEmpty ? ["validation failed (\(result))"] : errors.messages) }
    }
}

private struct ErrorCollector {
    var messages: [String] = []
}

private func collectError(_ userData: UnsafeMutableRawPointer?, _ error: xmlErrorPtr?) {
    guard let userData, let error, let message = error.pointee.message else { return }
    let collector = userData.assumingMemoryBound(to: ErrorCollector.self)
    collector.pointee.messages.append(
        String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines))
}
