import HeraldCore

import Foundation

/// One file of a pass or push package: its path inside the bundle (with `/`) and its bytes.
public struct BundleFile: Sendable, Hashable {
    /// The path inside the bundle, e.g. `icon.png` or `en.lproj/pass.strings`.
    public var path: String
    public var contents: [UInt8]

    /// A file with a path checked to stay inside the bundle.
    public init(path: String, contents: [UInt8]) throws(BundleError) {
        self.path = try Self.checkedPath(path)
        self.contents = contents
    }

    init(unchecked path: String, contents: [UInt8]) {
        self.path = path
        self.contents = contents
    }

    /// Refuses absolute paths, `..`, empty components, backslashes and NUL: a bundle's files
    /// never reach outside it.
    static func checkedPath(_ path: String) throws(BundleError) -> String {
        guard !path.isEmpty, !path.hasPrefix("/"), !path.contains("\\"), !path.contains("\0") else {
            throw BundleError(.pathEscape, "'\(path)': file paths in a bundle must be relative, with '/' between parts")
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw BundleError(.pathEscape, "'\(path)': '..', '.' and empty parts are not allowed in bundle paths")
        }
        return path
    }
}

extension [BundleFile] {
    /// The file at `path`, if there is one.
    public subscript(path path: String) -> BundleFile? {
        first { $0.path == path }
    }
}

/// Reads a bundle's files from a directory without ever leaving it.
enum BundleDirectory {
    /// Every regular file under `root`, with paths relative to it. Hidden files (`.DS_Store`,
    /// `.git`) are left out. A symbolic link is followed only if it stays inside `root`.
    static func read(_ root: String, maximumSize: Int = 64 << 20) throws(BundleError) -> [BundleFile] {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw BundleError(.unreadable, "'\(root)' is not a directory")
        }
        let rootURL = URL(fileURLWithPath: root).standardizedFileURL.resolvingSymlinksInPath()
        let rootPath = rootURL.path.hasSuffix("/") ? rootURL.path : rootURL.path + "/"
        var files: [BundleFile] = []
        var total = 0
        func walk(_ relative: String) throws(BundleError) {
            let directory = relative.isEmpty ? rootURL.path : rootURL.path + "/" + relative
            let names: [String]
            do {
                names = try manager.contentsOfDirectory(atPath: directory).sorted()
            } catch {
                throw BundleError(.unreadable, "cannot list '\(directory)': \(error.localizedDescription)")
            }
            for name in names where !name.hasPrefix(".") {
                let path = relative.isEmpty ? name : relative + "/" + name
                let full = rootURL.path + "/" + path
                let attributes = try? manager.attributesOfItem(atPath: full)
                if attributes?[.type] as? FileAttributeType == .typeSymbolicLink {
                    let target = URL(fileURLWithPath: full).resolvingSymlinksInPath().path
                    guard target.hasPrefix(rootPath) else {
                        throw BundleError(.pathEscape, "'\(path)' is a symbolic link to '\(target)', outside '\(root)'")
                    }
                }
                var childIsDirectory: ObjCBool = false
                guard manager.fileExists(atPath: full, isDirectory: &childIsDirectory) else {
                    throw BundleError(.unreadable, "'\(path)' is a broken symbolic link")
                }
                if childIsDirectory.boolValue {
                    try walk(path)
                    continue
                }
                let bytes: [UInt8]
                do {
                    bytes = try FileContents.read(full, limit: maximumSize)
                } catch {
                    throw BundleError(.unreadable, "cannot read '\(path)': \(error.reason)")
                }
                total += bytes.count
                guard total <= maximumSize else { throw BundleError(.invalidValue, "the files under '\(root)' add up to more than \(maximumSize) bytes") }
                files.append(BundleFile(unchecked: try BundleFile.checkedPath(path), contents: bytes))
            }
        }
        try walk("")
        return files
    }
}
