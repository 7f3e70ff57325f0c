import HeraldCore

extension JSONValue {
    /// The message without its receipt (the `herald` member each delivery carries): what the
    /// caller sent, to compare.
    var withoutReceipt: JSONValue {
        guard let members = objectValue else { return self }
        return .object(members.filter { $0.key != "herald" })
    }
}

extension Dictionary where Key == String, Value == String {
    /// FCM data without the receipt each delivery carries.
    var withoutReceipt: [String: String] { filter { $0.key != "herald" } }
}
