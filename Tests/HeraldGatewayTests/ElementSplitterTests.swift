import HeraldCore
import Testing

@testable import HeraldGateway

/// The bulk import's splitter as a plain value: bytes in, elements out, whatever the chunking.
@Suite("Element splitter")
struct ElementSplitterTests {
    private func split(_ text: String, _ format: ElementSplitter.Format, maximumSize: Int = 1000, chunk: Int? = nil) -> [ElementSplitter.Item] {
        var splitter = ElementSplitter(format: format, maximumSize: maximumSize)
        var items: [ElementSplitter.Item] = []
        let bytes = Array(text.utf8)
        let size = chunk ?? max(1, bytes.count)
        for start in stride(from: 0, to: bytes.count, by: size) {
            splitter.feed(bytes[start..<min(bytes.count, start + size)], into: &items)
        }
        splitter.finish(into: &items)
        return items
    }

    private func elements(_ items: [ElementSplitter.Item]) -> [String] {
        items.compactMap { item in
            if case .element(_, let bytes) = item { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }
    }

    @Test("NDJSON: lines by number, CRLF and blank lines, a last line without a newline")
    func lines() {
        let items = split("{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3}", .lines)
        #expect(items == [
            .element(number: 1, bytes: Array("{\"a\":1}\r".utf8)), .element(number: 4, bytes: Array("{\"b\":2}".utf8)),
            .element(number: 5, bytes: Array("{\"c\":3}".utf8)),
        ])
    }

    @Test("a JSON array: elements by position; strings and nesting may hold , ] and }")
    func array() {
        let text = #" [ {"a": "x,]}y", "b": [1, [2]], "c": {"d": "\"]"}} , 7,"s" ,{} ] "#
        let expected = [#"{"a": "x,]}y", "b": [1, [2]], "c": {"d": "\"]"}} "#, " 7", #""s" "#, "{} "]
        #expect(elements(split(text, .array)).map { $0.trimmingCharacters(in: .whitespaces) } == expected.map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(split("[]", .array).isEmpty)
        #expect(split("  [ ]  ", .array).isEmpty)
    }

    @Test("any chunking gives the same items as one piece", arguments: [ElementSplitter.Format.lines, .array])
    func chunking(format: ElementSplitter.Format) {
        let text = format == .lines
            ? (0..<50).map { #"{"token": "\#($0)", "tags": ["a,b", "c]d"]}"# }.joined(separator: "\n")
            : "[" + (0..<50).map { #"{"token": "\#($0)", "s": "\\\"],"}"# }.joined(separator: ",") + "]"
        let whole = split(text, format)
        #expect(whole.count == 50)
        for chunk in [1, 2, 3, 7, 64, 1000] {
            #expect(split(text, format, chunk: chunk) == whole, "chunks of \(chunk)")
        }
    }

    @Test("an element over the bound is reported and skipped; the next one is read")
    func bound() {
        let long = String(repeating: "x", count: 200)
        let lineItems = split("{\"a\":\"\(long)\"}\n{\"b\":1}\n", .lines, maximumSize: 100, chunk: 16)
        #expect(lineItems == [.failure(number: 1, message: "the line is over 100 bytes"), .element(number: 2, bytes: Array("{\"b\":1}".utf8))])
        let arrayItems = split("[{\"a\":\"\(long)\"},{\"b\":1}]", .array, maximumSize: 100, chunk: 16)
        #expect(arrayItems == [.failure(number: 1, message: "the element is over 100 bytes"), .element(number: 2, bytes: Array("{\"b\":1}".utf8))])
    }

    @Test("not an array, an array left open, text after it")
    func malformed() {
        #expect(split("{\"a\":1}", .array).count == 1)
        #expect(split("", .array) == [.failure(number: 1, message: "the body is empty; send a JSON array of devices")])
        let open = split("[{\"a\":1}, {\"b\"", .array)
        #expect(open.count == 2 && open.last == .failure(number: 2, message: "the body ends before the array is closed with ]"))
        let after = split("[{\"a\":1}] x", .array)
        #expect(after.last == .failure(number: 2, message: "unexpected text after the array's closing ]"))
        // Closing brackets that do not match never make the depth negative.
        #expect(elements(split("[}}, {\"a\":1}]", .array)) == ["}}", "{\"a\":1}"])
    }
}
