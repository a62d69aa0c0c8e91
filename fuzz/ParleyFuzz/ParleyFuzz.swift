import ParleyCore

/// libFuzzer entry point: one input, several ways of feeding it, and an oracle that the way
/// it is chunked never changes the events.
///
/// Input layout: byte 0 picks the limits (bit 7: small ones) and the chunking seed (bits 0–6);
/// byte 1 picks after which stanza the fourth pass stops and restarts the stream; the rest is
/// the stream.
@_cdecl("LLVMFuzzerTestOneInput")
public func parleyFuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size >= 2 else { return 0 }
    ParleyFuzzHarness.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

enum ParleyFuzzHarness {
    struct Outcome {
        var events: [XMLStreamEvent] = []
        var error: StreamError?
    }

    static func run(_ input: UnsafeRawBufferPointer) {
        let control = input[0]
        let stopAfter = Int(input[1] & 0x0F)
        let stream = UnsafeRawBufferPointer(rebasing: input[2...])
        let limits =
            control & 0x80 != 0
            ? XMLStreamParser.Limits(maxStanzaBytes: 512, maxDepth: 4)
            : XMLStreamParser.Limits()

        // Pass 1: chunks of pseudo-random sizes.
        let parser = XMLStreamParser(limits: limits)
        var generator = UInt64(control & 0x7F) &+ 0x9E37_79B9
        let chunked = feed(parser, stream) {
            generator = generator &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let maximum = [1, 3, 16, 64, 512, 4096][Int(generator >> 61) % 6]
            return 1 + Int((generator >> 33) % UInt64(maximum))
        }

        // Pass 2: the same object after reset, everything at once.
        parser.reset()
        let whole = feed(parser, stream) { Int.max }

        if chunked.error == nil, whole.error == nil {
            precondition(chunked.events == whole.events, "chunking changed the events")
        } else {
            let shorter = min(chunked.events.count, whole.events.count)
            precondition(
                chunked.events.prefix(shorter) == whole.events.prefix(shorter),
                "chunking changed the events before an error")
        }

        // A parsed stanza (an arena view) reads, compares, hashes and serializes exactly like
        // the same element built in code from what it reads.
        for case .stanza(let element) in whole.events {
            // The namespace is set afterwards: the initializer would hand it down to children in
            // no namespace (its nil means "inherit" there).
            var copy = XMLElement(element.name, attributes: element.attributes, children: element.children)
            copy.namespace = element.namespace
            precondition(copy == element && element == copy, "a parsed stanza differs from its copy")
            precondition(copy.hashValue == element.hashValue, "a parsed stanza hashes unlike its copy")
            precondition(copy.xmlBytes() == element.xmlBytes(), "a parsed stanza serializes unlike its copy")
            precondition(element.text == copy.text && element.elements.count == copy.elements.count, "reads differ")
            for attribute in element.attributes {
                precondition(element.attribute(attribute.name, namespace: attribute.namespace) != nil, "an attribute cannot be found")
            }
            // The four the router reads are found by the name's number, not by comparison.
            precondition(
                element.to == copy.to && element.from == copy.from && element.id == copy.id && element.type == copy.type,
                "to/from/id/type read unlike the copy's")
        }

        // Pass 3: every stanza let go as soon as it is read, so the parser writes each one over
        // the arena of the one before: each must still read as the held ones of pass 2 do.
        parser.reset()
        var index = 0
        var pieces = 0
        var letGoOffset = 0
        while letGoOffset < stream.count {
            pieces += 1
            let end = min(letGoOffset + (pieces % 3 == 0 ? 7 : 301), stream.count)
            do {
                try parser.feed(UnsafeRawBufferPointer(rebasing: stream[letGoOffset..<end])) { event in
                    precondition(index < whole.events.count, "more events than the whole stream gave")
                    let held = whole.events[index]
                    precondition(event == held, "a stanza read over a reused arena differs")
                    if case .stanza(let element) = event, case .stanza(let heldElement) = held {
                        precondition(element.xmlBytes() == heldElement.xmlBytes(), "a reused arena serializes differently")
                        precondition(element.type == heldElement.type && element.id == heldElement.id, "type/id differ")
                    }
                    index += 1
                    return .continue
                }
            } catch {
                break
            }
            letGoOffset = end
        }
        precondition(whole.error != nil || index == whole.events.count, "fewer events than the whole stream gave")

        // Pass 4: stop after the n-th event, reset, and feed the rest as a new stream.
        parser.reset()
        var seen = 0
        var offset = 0
        var restarts = 0
        while offset < stream.count, restarts < 4 {
            var stopped = false
            do {
                let consumed = try parser.feed(UnsafeRawBufferPointer(rebasing: stream[offset...])) { _ in
                    seen += 1
                    if seen == stopAfter + 1 {
                        stopped = true
                        return .stop
                    }
                    return .continue
                }
                precondition(consumed >= 0 && consumed <= stream.count - offset, "consumed out of range")
                precondition(stopped || consumed == stream.count - offset, "short count without a stop")
                offset += consumed
            } catch {
                break
            }
            guard stopped else { break }
            parser.reset()
            seen = 0
            restarts += 1
        }
    }

    static func feed(
        _ parser: XMLStreamParser, _ stream: UnsafeRawBufferPointer, nextChunk: () -> Int
    ) -> Outcome {
        var outcome = Outcome()
        var offset = 0
        while offset < stream.count {
            let end = offset + min(nextChunk(), stream.count - offset)
            do {
                let consumed = try parser.feed(UnsafeRawBufferPointer(rebasing: stream[offset..<end])) { event in
                    outcome.events.append(event)
                    return .continue
                }
                precondition(consumed == end - offset, "consumed less without a stop")
            } catch {
                outcome.error = error
                return outcome
            }
            offset = end
        }
        return outcome
    }
}

#if FUZZING
// SwiftPM links an executable with `main` aliased to `ParleyFuzz_main`, which hides libFuzzer's
// own `main`; this one hands control to libFuzzer's driver instead. (`@_silgen_name` rather than
// `@_extern(c)`, which needs an experimental flag: with only pointer arguments and an Int32
// result, Swift's calling convention passes them exactly as C does on x86-64 and arm64.)
@_silgen_name("LLVMFuzzerRunDriver")
func llvmFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("ParleyFuzz_main")
public func parleyFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return llvmFuzzerRunDriver(&argc, &argv, parleyFuzzOneInput)
}
#else
import Foundation

/// Without libFuzzer: replays files (or every file in directories) through the same harness,
/// as a regression runner for the corpus and for crash files.
@main
enum ParleyFuzzReplay {
    static func main() {
        var files: [String] = []
        for argument in CommandLine.arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                print("no such file: \(argument)")
                exit(2)
            }
            if isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
                files += names.sorted().map { argument + "/" + $0 }
            } else {
                files.append(argument)
            }
        }
        if files.isEmpty {
            print("usage: ParleyFuzz FILE_OR_DIRECTORY...")
            exit(2)
        }
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            data.withUnsafeBytes { raw in
                if let base = raw.baseAddress {
                    _ = parleyFuzzOneInput(base.assumingMemoryBound(to: UInt8.self), raw.count)
                }
            }
        }
        print("replayed \(files.count) inputs")
    }
}
#endif
