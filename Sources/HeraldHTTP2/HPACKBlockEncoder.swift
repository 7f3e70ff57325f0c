import NIOCore
import Synchronization

/// Writes HPACK header blocks (RFC 7541) without Huffman coding, keeping a mirror of the peer's
/// dynamic table so it can choose per field: indexed, literal with incremental indexing, or
/// literal without indexing. Repeated fields (topic, push type, authority) then cost one byte.
///
/// Huffman coding is left out on purpose: it saves a few bytes per request but costs more CPU
/// than the bytes do to encrypt and send; HPACK lets every encoder choose (RFC 7541 §5.2).
package struct HPACKBlockEncoder {
    /// Static table indices used here (RFC 7541 Appendix A).
    package enum Static {
        package static let authority = 1
        package static let methodGET = 2
        package static let methodPOST = 3
        package static let path = 4
        package static let schemeHTTPS = 7
        package static let status200 = 8
        package static let status = 8
        package static let authorization = 23
        package static let contentLength = 28
        package static let contentType = 31
        package static let statusIndex: [Int: Int] = [200: 8, 204: 9, 206: 10, 304: 11, 400: 12, 404: 13, 500: 14]
    }

    private struct Entry {
        var name: String
        var value: String
        var size: Int
    }

    /// The largest table this encoder uses (it may use less than the peer allows).
    package static let preferredTableSize = 4096

    private var entries: [Entry] = []  // oldest first
    private var size = 0
    private(set) var maximumSize: Int = HPACKBlockEncoder.preferredTableSize
    private var pendingSizeUpdate: Int?
    /// The table's state: a number no other state of any encoder in the process had, taken anew
    /// whenever the table changes (an entry added or evicted, a new size). Fields encoded while
    /// it stayed the same encode to the same bytes again while it still is.
    package private(set) var generation = HPACKBlockEncoder.nextGeneration()
    private static let generations = Atomic<Int>(0)
    private static func nextGeneration() -> Int { generations.add(1, ordering: .relaxed).newValue }

    package init() {}

    /// The peer's SETTINGS_HEADER_TABLE_SIZE: the table may not grow past it. A smaller value is
    /// announced at the start of the next block (RFC 7541 §4.2).
    package mutating func peerAllowsTableSize(_ peerSize: Int) {
        let newMaximum = min(Self.preferredTableSize, peerSize)
        guard newMaximum != maximumSize else { return }
        maximumSize = newMaximum
        generation = Self.nextGeneration()
        evict(toFit: 0)
        pendingSizeUpdate = newMaximum
    }

    /// Call at the start of every header block.
    package mutating func beginBlock(into buffer: inout ByteBuffer) {
        if let update = pendingSizeUpdate {
            Self.writeInteger(update, prefixBits: 5, pattern: 0x20, into: &buffer)
            pendingSizeUpdate = nil
        }
    }

    /// An indexed field from the static table.
    package func indexed(_ index: Int, into buffer: inout ByteBuffer) {
        Self.writeInteger(index, prefixBits: 7, pattern: 0x80, into: &buffer)
    }

    /// `:status`: indexed when the static table has the code (200, 204, 400, 404, 500, …), else
    /// literal with the static name.
    package func status(_ code: Int, into buffer: inout ByteBuffer) {
        if let index = Static.statusIndex[code] {
            indexed(index, into: &buffer)
        } else {
            literal(staticNameIndex: Static.status, value: String(code), into: &buffer)
        }
    }

    /// A field worth remembering: indexed if already in the table, else literal with incremental
    /// indexing (naming it by `staticNameIndex` when the static table has the name).
    package mutating func indexing(name: String, value: String, staticNameIndex: Int? = nil, into buffer: inout ByteBuffer) {
        if let index = dynamicIndex(name: name, value: value) {
            Self.writeInteger(index, prefixBits: 7, pattern: 0x80, into: &buffer)
            return
        }
        if let staticNameIndex {
            Self.writeInteger(staticNameIndex, prefixBits: 6, pattern: 0x40, into: &buffer)
        } else {
            buffer.writeInteger(UInt8(0x40))
            Self.writeString(name, into: &buffer)
        }
        Self.writeString(value, into: &buffer)
        insert(name: name, value: value)
    }

    /// A field whose value changes every time, with a name from the static table: literal
    /// without indexing (`:path`, `authorization`, apns-spec §1.3).
    package func literal(staticNameIndex: Int, value: String, into buffer: inout ByteBuffer) {
        Self.writeInteger(staticNameIndex, prefixBits: 4, pattern: 0x00, into: &buffer)
        Self.writeString(value, into: &buffer)
    }

    /// A credential, with a name from the static table: literal never indexed, so that no
    /// intermediary indexes it either (RFC 7541 §6.2.3, §7.1.3).
    package func literalNeverIndexed(staticNameIndex: Int, value: String, into buffer: inout ByteBuffer) {
        Self.writeInteger(staticNameIndex, prefixBits: 4, pattern: 0x10, into: &buffer)
        Self.writeString(value, into: &buffer)
    }

    /// A field whose value changes every time, name not in the static table: the first time the
    /// name is indexed (with this value), after that the field is literal without indexing and
    /// refers to the indexed name (`apns-id`, `apns-expiration`, `apns-collapse-id`, apns-spec §1.3).
    package mutating func literal(name: String, value: String, into buffer: inout ByteBuffer) {
        if let nameIndex = dynamicNameIndex(name) {
            Self.writeInteger(nameIndex, prefixBits: 4, pattern: 0x00, into: &buffer)
            Self.writeString(value, into: &buffer)
        } else {
            indexing(name: name, value: value, into: &buffer)
        }
    }

    // MARK: Table

    private func dynamicIndex(name: String, value: String) -> Int? {
        var position = entries.count - 1
        while position >= 0 {
            if entries[position].name == name && entries[position].value == value {
                return 62 + (entries.count - 1 - position)
            }
            position -= 1
        }
        return nil
    }

    private func dynamicNameIndex(_ name: String) -> Int? {
        var position = entries.count - 1
        while position >= 0 {
            if entries[position].name == name { return 62 + (entries.count - 1 - position) }
            position -= 1
        }
        return nil
    }

    private mutating func insert(name: String, value: String) {
        generation = Self.nextGeneration()
        let entrySize = name.utf8.count + value.utf8.count + 32
        guard entrySize <= maximumSize else {
            // Larger than the table: inserting empties it (RFC 7541 §4.4).
            entries.removeAll()
            size = 0
            return
        }
        evict(toFit: entrySize)
        entries.append(Entry(name: name, value: value, size: entrySize))
        size += entrySize
    }

    private mutating func evict(toFit extra: Int) {
        var drop = 0
        while size + extra > maximumSize, drop < entries.count {
            size -= entries[drop].size
            drop += 1
        }
        if drop > 0 { entries.removeFirst(drop) }
    }

    // MARK: Primitives (RFC 7541 §5)

    package static func writeInteger(_ value: Int, prefixBits: Int, pattern: UInt8, into buffer: inout ByteBuffer) {
        let limit = (1 << prefixBits) - 1
        if value < limit {
            buffer.writeInteger(pattern | UInt8(value))
            return
        }
        buffer.writeInteger(pattern | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            buffer.writeInteger(UInt8(rest & 0x7F | 0x80))
            rest >>= 7
        }
        buffer.writeInteger(UInt8(rest))
    }

    package static func writeString(_ string: String, into buffer: inout ByteBuffer) {
        writeInteger(string.utf8.count, prefixBits: 7, pattern: 0x00, into: &buffer)
        buffer.writeString(string)
    }
}
