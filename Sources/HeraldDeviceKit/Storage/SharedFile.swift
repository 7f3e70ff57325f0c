import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A small JSON document in a file that several processes change: the app and its Notification
/// Service Extension, both in one App Group container.
///
/// Every change is read, modify, write under an exclusive `flock(2)` on a lock file beside the
/// document, and the write is atomic (a temporary file renamed over the document), so a reader
/// never sees half a file and no writer's change is lost. Why this way:
/// - `flock`, not `lockf`/`fcntl`: POSIX record locks belong to the process, so two instances in
///   one process (or two threads) would not exclude each other; `flock` locks belong to the open
///   file, and each change opens its own.
/// - A lock file apart from the document: the rename replaces the document's inode, and a lock
///   on the old inode would not exclude a process that opened the new one.
/// - The lock is held only inside one synchronous change, never across an `await`: iOS ends an
///   app that is suspended while it holds a lock on a file in a shared container (Apple's
///   Technical Note TN2151, exception code `0xdead10cc`).
struct SharedFile<Document: Codable & Equatable>: Sendable {
    let url: URL
    let lockURL: URL

    init(directory: URL, name: String) {
        url = directory.appending(component: name + ".json")
        lockURL = directory.appending(component: name + ".lock")
    }

    /// Runs `body` on the document (`nil` when there is none yet, or it cannot be decoded) under
    /// the lock, and writes it back when `body` changed it.
    func update<Result>(_ body: (inout Document?) -> Result) throws(HeraldDeviceError) -> Result {
        let descriptor = try openLock()
        // Closing the descriptor releases the lock.
        defer { close(descriptor) }
        try lock(descriptor)
        let before = try read()
        var document = before
        let result = body(&document)
        if document != before, let document { try write(document) }
        return result
    }

    private func openLock() throws(HeraldDeviceError) -> Int32 {
        var descriptor = open(lockURL.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if descriptor < 0, errno == ENOENT {
            // The directory is not there yet: make it once, then try again.
            try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            descriptor = open(lockURL.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        }
        guard descriptor >= 0 else { throw Self.failure("open", lockURL, errno) }
        return descriptor
    }

    private func lock(_ descriptor: Int32) throws(HeraldDeviceError) {
        // A signal may interrupt the wait (EINTR); a few tries, then give up.
        for _ in 0..<100 {
            if flock(descriptor, LOCK_EX) == 0 { return }
            guard errno == EINTR else { break }
        }
        throw Self.failure("flock", lockURL, errno)
    }

    private func read() throws(HeraldDeviceError) -> Document? {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            // None yet is an empty document; one that is there but cannot be read (iOS's data
            // protection before the first unlock) must not be overwritten as if it were empty.
            if !FileManager.default.fileExists(atPath: url.path) { return nil }
            throw HeraldDeviceError(.storage, detail: "cannot read \(url.path): \(error)")
        }
        // A document that does not decode (cut short by a full disk, written by a future
        // version) is started afresh rather than blocking every change after it.
        return try? JSONDecoder().decode(Document.self, from: data)
    }

    private func write(_ document: Document) throws(HeraldDeviceError) {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            try encoder.encode(document).write(to: url, options: Self.writingOptions)
        } catch {
            throw HeraldDeviceError(.storage, detail: "cannot write \(url.path): \(error)")
        }
    }

    #if os(iOS) || os(watchOS) || os(tvOS) || os(visionOS)
    // The Notification Service Extension runs while the device is locked: a file with complete
    // protection could not be opened then.
    private static var writingOptions: Data.WritingOptions { [.atomic, .completeFileProtectionUntilFirstUserAuthentication] }
    #else
    private static var writingOptions: Data.WritingOptions { [.atomic] }
    #endif

    private static func failure(_ call: String, _ url: URL, _ code: Int32) -> HeraldDeviceError {
        HeraldDeviceError(.storage, detail: "\(call) \(url.path): \(String(cString: strerror(code)))")
    }
}
