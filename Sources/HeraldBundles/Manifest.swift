import Crypto
import HeraldCore

/// `manifest.json`: the digest of every file of a bundle, except the manifest and the signature.
public enum ManifestFormat: Sendable, Hashable {
    /// Wallet passes, and Safari push packages version 1: `{"path": "<sha1 hex>"}` (apns-spec §5.3, §6.4).
    case sha1
    /// Safari push packages version 2: `{"path": {"hashType": "sha512", "hashValue": "<hex>"}}` (§5.3).
    case sha512Objects

    /// The manifest for `files`, keys sorted so the same files always give the same bytes.
    func manifest(for files: [BundleFile]) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + files.count * 100)
        writer.beginObject()
        for file in files.sorted(by: { $0.path < $1.path }) where file.path != "manifest.json" && file.path != "signature" {
            writer.key(file.path)
            switch self {
            case .sha1:
                writer.string(Self.hex(Insecure.SHA1.hash(data: file.contents)))
            case .sha512Objects:
                writer.beginObject()
                writer.key("hashType")
                writer.string("sha512")
                writer.key("hashValue")
                writer.string(Self.hex(SHA512.hash(data: file.contents)))
                writer.endObject()
            }
        }
        writer.endObject()
        return writer.bytes
    }

    /// The digest the manifest should hold for `contents`, in this format's hex.
    func digest(of contents: [UInt8], hashType: String) -> String? {
        switch hashType {
        case "sha1": return Self.hex(Insecure.SHA1.hash(data: contents))
        case "sha512": return Self.hex(SHA512.hash(data: contents))
        case "sha256": return Self.hex(SHA256.hash(data: contents))
        default: return nil
        }
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
