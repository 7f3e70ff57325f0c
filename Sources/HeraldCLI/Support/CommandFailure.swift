/// A failure that ends the command with one clear line on stderr and an exit status.
struct CommandFailure: Error, CustomStringConvertible {
    /// 2: usage or configuration error (bad flags, unreadable key, bad payload).
    static let usageStatus: Int32 = 2

    var message: String
    var status: Int32

    init(status: Int32, _ message: String) {
        self.message = message
        self.status = status
    }

    init(_ message: String, status: Int32 = CommandFailure.usageStatus) {
        self.message = message
        self.status = status
    }

    /// A usage or configuration error (exit status 2).
    static func usage(_ message: String) -> CommandFailure {
        CommandFailure(message)
    }

    /// What mends a server certificate the client does not trust, for every sending command.
    static let trustAdvice =
        "trust its CA with --ca-file FILE.pem (a mock's: the file `herald mock` wrote), or add the CA to the system's trust store (Debian: ca-certificates, update-ca-certificates)"

    var description: String { message }
}
