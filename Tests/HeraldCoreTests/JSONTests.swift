import Foundation
import HeraldCore
import Testing

@Suite("JSON reading and writing")
struct JSONTests {
    @Test("values round-trip through the writer and parser")
    func roundTrip() throws {
        let value: JSONValue = [
            "s": "a\"b\\c\u{0}é😀", "i": -42, "big": .int(Int.max), "small": .int(Int.min), "d": 0.1, "e": 1e-7,
            "t": true, "f": false, "n": nil, "a": [[], [:], [1, [2, [3]]]],
        ]
        #expect(try JSONValue(parsing: value.jsonString) == value)
        // Foundation reads what Herald writes.
        #expect(try JSONSerialization.jsonObject(with: Data(value.jsonString.utf8)) is NSDictionary)
    }

    @Test("strict RFC 8259: what is not JSON is refused with the offset", arguments: [
        "", " ", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "NaN", "Infinity", "nul", "tru",
        "'a'", "\"\u{01}\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "{a:1}", "[1 2]", "{\"a\" 1}",
        "1 2", "/*c*/1", "\"abc", "1e999",
    ])
    func refusesInvalid(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
    }

    @Test("a key twice in one object is refused (I-JSON), naming the key; the same key in two objects is fine")
    func duplicateKeys() throws {
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: #"{"badge": 1, "aps": {}, "badge": 2}"#) }
        #expect(error?.message == #"duplicate key "badge""#)
        #expect(error?.offset == 24)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: #"{"a": 1, "\u0061": 2}"#) }
        #expect(try JSONValue(parsing: #"[{"a": 1}, {"a": 2}]"#) == [["a": 1], ["a": 2]])
    }

    @Test("escapes and surrogate pairs decode")
    func escapes() throws {
        #expect(try JSONValue(parsing: #""\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00""#) == .string("\"\\/\u{8}\u{C}\n\r\té😀"))
    }

    @Test("strings: ASCII, raw UTF-8 and escapes in any mix decode; bytes that are not UTF-8 are refused, escaped or not")
    func utf8Strings() throws {
        func parse(_ bytes: [UInt8]) throws -> JSONValue { try JSONValue(parsing: [UInt8(ascii: "\"")] + bytes + [UInt8(ascii: "\"")]) }
        #expect(try parse(Array("plain ascii".utf8)) == .string("plain ascii"))
        #expect(try parse(Array("café 😀".utf8)) == .string("café 😀"))
        #expect(try parse(Array(#"café\n😀\t"#.utf8)) == .string("café\n😀\t"))
        #expect(try parse(Array(#"\u00e9 then é"#.utf8)) == .string("é then é"))
        #expect(try parse([]) == .string(""))
        // A lone continuation byte, a truncated sequence, an overlong encoding, a byte never in
        // UTF-8, a surrogate: each alone, after an escape, before one, and after other UTF-8.
        for bad: [UInt8] in [[0x80], [0xC3], [0xC0, 0xAF], [0xFF], [0xED, 0xA0, 0x80]] {
            for bytes in [bad, Array(#"a\n"#.utf8) + bad, bad + Array(#"\tz"#.utf8), Array("é".utf8) + bad] {
                let error = #expect(throws: JSONParseError.self, "\(bytes)") { try parse(bytes) }
                #expect(error?.message == "string is not valid UTF-8" && error?.offset == 0, "\(bytes)")
            }
        }
        // Thousands of escapes in one string: each appended where it is, the rest kept.
        let many = String(repeating: #"ab\n"#, count: 5000)
        #expect(try parse(Array(many.utf8)) == .string(String(repeating: "ab\n", count: 5000)))
    }

    @Test("numbers: integers stay integers, others become doubles")
    func numbers() throws {
        #expect(try JSONValue(parsing: "0") == .int(0))
        #expect(try JSONValue(parsing: "-0") == .int(0))
        #expect(try JSONValue(parsing: "1.5e3") == .double(1500))
        #expect(try JSONValue(parsing: "99999999999999999999") == .double(1e20))
        #expect(try JSONValue(parsing: " [1] ") == [1])
    }

    @Test("the error names the offset")
    func errorOffset() {
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: #"{"a":[1,2,}"#) }
        #expect(error?.offset == 10)
        #expect(error?.description.hasPrefix("invalid JSON at byte 10") == true)
    }

    @Test("deep nesting is refused instead of overflowing the stack")
    func depthLimit() throws {
        _ = try JSONValue(parsing: String(repeating: "[", count: 500) + String(repeating: "]", count: 500))
        let deep = String(repeating: "[", count: 100_000)
        let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: deep) }
        #expect(error?.message.contains("nesting") == true)
    }

    @Test("random bytes never crash the parser (bounded, seeded)")
    func randomBytes() {
        var generator = SplitMix64(seed: 0x4845_5241_4C44)
        let alphabet = Array(#"{}[]",:0123456789.eE+-truefalsenull\u"#.utf8) + [0x20, 0x0A, 0xC3, 0xA9, 0xFF, 0x00]
        var parsed = 0
        for _ in 0..<20_000 {
            let length = Int(generator.next() % 24)
            let bytes = (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            if (try? JSONValue(parsing: bytes)) != nil { parsed += 1 }
        }
        #expect(parsed > 0)  // the generator does produce some valid documents
    }
}

