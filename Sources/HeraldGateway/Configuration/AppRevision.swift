import Crypto
import HeraldCore

/// What an app's configuration was read from, as one digest: its entry in the file (or the
/// API's definition) and the bytes of every file the entry names (a key, a certificate, a CA).
/// A reload rebuilds an app's clients only when its revision changes, so a `SIGHUP` that changes
/// one app of ten thousand closes that app's connections only, and a key file replaced under
/// the same name counts as a change.
enum AppRevision {
    /// The members of an app's entry that name a file, at any depth.
    static let fileMembers: Set<String> = ["file", "keyFile", "caFile", "serviceAccountFile", "vapidKeyFile"]

    /// The digest of `entry` (keys sorted: the same entry always gives the same digest) and of
    /// the files it names, relative to `directory`; a file that cannot be read counts by its name
    /// alone (the app's parser has refused it already).
    static func of(_ entry: [String: JSONValue], directory: String) -> String {
        var hash = SHA256()
        let value = JSONValue.object(entry)
        hash.update(data: Array(value.jsonString.utf8))
        var files: [String] = []
        collectFiles(value, into: &files)
        for file in files.sorted() {
            let path = GatewayConfiguration.App.resolve(file, in: directory)
            hash.update(data: [0] + Array(path.utf8) + [0])
            if let bytes = try? FileContents.read(path, limit: GatewayConfiguration.maximumAppFileSize) {
                hash.update(data: Array(SHA256.hash(data: bytes)))
            }
        }
        return hash.finalize().prefix(16).map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
        }.joined()
    }

    private static func collectFiles(_ value: JSONValue, into files: inout [String]) {
        switch value {
        case .object(let members):
            for (name, member) in members {
                if fileMembers.contains(name), let path = member.stringValue { files.append(path) } else { collectFiles(member, into: &files) }
            }
        case .array(let items):
            for item in items { collectFiles(item, into: &files) }
        default:
            return
        }
    }
}
