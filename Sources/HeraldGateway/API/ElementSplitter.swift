/// Splits a streamed body into the JSON texts of its devices, without holding more than one of
/// them: lines of NDJSON, or the elements of one JSON array. A plain value state machine: bytes
/// in, items out.
///
/// Each item carries its number: the line (NDJSON, from 1) or the element's position in the
/// array (from 1), which is what import errors point at.
struct ElementSplitter {
    enum Format: Sendable {
        /// One JSON object per line (`application/x-ndjson`); blank lines are skipped.
        case lines
        /// One JSON array of objects (`application/json`).
        case array
    }

    enum Item: Equatable {
        case element(number: Int, bytes: [UInt8])
        case failure(number: Int, message: String)
    }

    private enum ArrayState {
        case start, beforeElement, inElement, afterArray, broken
    }

    let format: Format
    /// The longest element kept; a longer one is reported and skipped.
    let maximumSize: Int
    private var current: [UInt8] = []
    private var overflowed = false
    private var number = 1
    private var state = ArrayState.start
    private var depth = 0
    private var inString = false
    private var escaped = false

    init(format: Format, maximumSize: Int) {
        self.format = format
        self.maximumSize = maximumSize
    }

    mutating func feed(_ bytes: some Collection<UInt8>, into items: inout [Item]) {
        switch format {
        case .lines: feedLines(bytes, into: &items)
        case .array: for byte in bytes { feedArray(byte, into: &items) }
        }
    }

    /// The end of the body: a last line without a newline, or an array left open.
    mutating func finish(into items: inout [Item]) {
        switch format {
        case .lines:
            endLine(into: &items)
        case .array:
            switch state {
            case .start: items.append(.failure(number: 1, message: "the body is empty; send a JSON array of devices"))
            case .beforeElement, .inElement: items.append(.failure(number: number, message: "the body ends before the array is closed with ]"))
            case .afterArray, .broken: break
            }
            state = .broken
        }
    }

    // MARK: NDJSON

    private mutating func feedLines(_ bytes: some Collection<UInt8>, into items: inout [Item]) {
        var rest = bytes[...]
        while let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
            append(rest[..<newline])
            endLine(into: &items)
            rest = rest[rest.index(after: newline)...]
        }
        append(rest)
    }

    private mutating func append(_ bytes: some Collection<UInt8>) {
        guard !overflowed else { return }
        if current.count + bytes.count > maximumSize {
            overflowed = true
            current.removeAll(keepingCapacity: true)
        } else {
            current.append(contentsOf: bytes)
        }
    }

    private mutating func endLine(into items: inout [Item]) {
        if overflowed {
            items.append(.failure(number: number, message: "the line is over \(maximumSize) bytes"))
        } else if current.contains(where: { !Self.isWhitespace($0) }) {
            items.append(.element(number: number, bytes: current))
        }
        number += 1
        current.removeAll(keepingCapacity: true)
        overflowed = false
    }

    // MARK: JSON array

    private mutating func feedArray(_ byte: UInt8, into items: inout [Item]) {
        switch state {
        case .broken:
            return
        case .start:
            if Self.isWhitespace(byte) { return }
            if byte == UInt8(ascii: "[") {
                state = .beforeElement
            } else {
                items.append(.failure(number: 1, message: "expected a JSON array of devices ([{…}, …]); for one device per line send Content-Type: application/x-ndjson"))
                state = .broken
            }
        case .beforeElement:
            if Self.isWhitespace(byte) { return }
            if byte == UInt8(ascii: "]"), number == 1 {
                state = .afterArray
                return
            }
            state = .inElement
            depth = 0
            inString = false
            escaped = false
            current.removeAll(keepingCapacity: true)
            overflowed = false
            feedArray(byte, into: &items)
        case .inElement:
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""):
                    inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"):
                    depth = max(0, depth - 1)
                case UInt8(ascii: "]"):
                    guard depth == 0 else {
                        depth -= 1
                        break
                    }
                    endElement(into: &items)
                    state = .afterArray
                    return
                case UInt8(ascii: ","):
                    guard depth == 0 else { break }
                    endElement(into: &items)
                    state = .beforeElement
                    return
                default:
                    break
                }
            }
            if overflowed { return }
            if current.count >= maximumSize {
                overflowed = true
                current.removeAll(keepingCapacity: true)
            } else {
                current.append(byte)
            }
        case .afterArray:
            if !Self.isWhitespace(byte) {
                items.append(.failure(number: number, message: "unexpected text after the array's closing ]"))
                state = .broken
            }
        }
    }

    private mutating func endElement(into items: inout [Item]) {
        if overflowed {
            items.append(.failure(number: number, message: "the element is over \(maximumSize) bytes"))
        } else {
            items.append(.element(number: number, bytes: current))
        }
        number += 1
        current.removeAll(keepingCapacity: true)
        overflowed = false
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
