import HeraldCore
import ZIPFoundation

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A signed pass or push package: its files with `manifest.json` and `signature`, ready to zip.
public struct SignedBundle: Sendable {
    /// Every file, `manifest.json` and `signature` included.
    public let files: [BundleFile]
    /// The bytes of `manifest.json`, as signed.
    public let manifest: [UInt8]
    /// The DER CMS signature over the manifest.
    public let signature: [UInt8]
    /// Things worth knowing that did not stop the signing (a certificate expiring soon).
    public let warnings: [String]
    /// The MIME type to serve it with.
    public let mimeType: String
    /// When it was signed; also the date of every zip entry, so the same bundle zips to the same bytes.
    public let signingTime: Date

    init(files: [BundleFile], manifest: [UInt8], signature: [UInt8], warnings: [String], mimeType: String, signingTime: Date) {
        self.signingTime = signingTime
        self.files = files + [BundleFile(unchecked: "manifest.json", contents: manifest), BundleFile(unchecked: "signature", contents: signature)]
        self.manifest = manifest
        self.signature = signature
        self.warnings = warnings
        self.mimeType = mimeType
    }

    /// The zip, in memory. Entries are at the archive root with `/` in their names (apns-spec §5.1, §6.1).
    public func zipData() throws(BundleError) -> [UInt8] {
        try ZipWriter.zip(files, modificationDate: signingTime)
    }

    /// Writes the zip to a file.
    public func write(toFile path: String) throws(BundleError) {
        let bytes = try zipData()
        do {
            try FileContents.write(bytes, to: path)
        } catch {
            throw BundleError(.unreadable, error.description)
        }
    }

    /// Streams the zip to any writer (an HTTP response body, a socket) in chunks of `chunkSize`.
    public func write(chunkSize: Int = 64 << 10, to writer: (ArraySlice<UInt8>) throws -> Void) throws {
        let bytes = try zipData()
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunkSize, bytes.count)
            try writer(bytes[offset..<end])
            offset = end
        }
    }
}

/// MIME types for bundles (apns-spec §5.1, §6.1, §6.6).
public enum BundleMIMEType {
    public static let pass = "application/vnd.apple.pkpass"
    public static let passes = "application/vnd.apple.pkpasses"
    public static let pushPackage = "application/zip"
}

/// Zips files with ZIPFoundation, in memory.
enum ZipWriter {
    static func zip(_ files: [BundleFile], modificationDate: Date) throws(BundleError) -> [UInt8] {
        do {
            let archive = try Archive(accessMode: .create)
            for file in files {
                let contents = file.contents
                try archive.addEntry(
                    with: file.path, type: .file, uncompressedSize: Int64(contents.count), modificationDate: modificationDate,
                    compressionMethod: .deflate
                ) { position, size in
                    let start = Int(position)
                    return Data(contents[start..<min(start + size, contents.count)])
                }
            }
            guard let data = archive.data else { throw BundleError(.signingFailed, "the zip could not be made in memory") }
            return Array(data)
        } catch let error as BundleError {
            throw error
        } catch {
            throw BundleError(.signingFailed, "the zip could not be written: \(error)")
        }
    }

    /// The files of a zip, directories left out, paths checked to stay inside it.
    static func unzip(_ bytes: [UInt8], maximumSize: Int = 256 << 20) throws(BundleError) -> [BundleFile] {
        do {
            let archive = try Archive(data: Data(bytes), accessMode: .read)
            var files: [BundleFile] = []
            var total = 0
            for entry in archive where entry.type == .file {
                var contents = [UInt8]()
                _ = try archive.extract(entry) { chunk in contents.append(contentsOf: chunk) }
                total += contents.count
                guard total <= maximumSize else { throw BundleError(.invalidValue, "the zip expands to more than \(maximumSize) bytes") }
                files.append(try BundleFile(path: entry.path, contents: contents))
            }
            return files
        } catch let error as BundleError {
            throw error
        } catch {
            throw BundleError(.unreadable, "not a readable zip: \(error)")
        }
    }
}
