import Foundation
import HeraldDeviceKit
import Testing

@Suite("Receipt tokens in payloads")
struct ReceiptParsingTests {
    @Test("A token of base64url characters under \"herald\" is the receipt")
    func validToken() throws {
        let userInfo: [AnyHashable: Any] = ["aps": ["alert": "Hi"], "herald": "AQAB-_z9"]
        #expect(HeraldReceipt(userInfo: userInfo)?.token == "AQAB-_z9")
        let payload = Data(#"{"aps":{"alert":"Hi"},"herald":"AQAB-_z9"}"#.utf8)
        #expect(HeraldReceipt(payload: payload)?.token == "AQAB-_z9")
    }

    @Test("48 characters are a token; 49 and none are not")
    func length() {
        #expect(HeraldReceipt(token: String(repeating: "A", count: 48)) != nil)
        #expect(HeraldReceipt(token: String(repeating: "A", count: 49)) == nil)
        #expect(HeraldReceipt(token: "") == nil)
        #expect(HeraldReceipt(userInfo: ["herald": String(repeating: "a", count: 49)]) == nil)
    }

    @Test("Characters outside the base64url alphabet, padding included, are not a token", arguments: [
        "AQAB=", "AQ+B", "AQ/B", "AQ B", "AQAB\n", "é", "AQ.B",
    ])
    func wrongAlphabet(token: String) {
        #expect(HeraldReceipt(token: token) == nil)
        #expect(HeraldReceipt(userInfo: ["herald": token]) == nil)
    }

    @Test("A payload without the key, or with something else than a string under it, has no receipt")
    func missingOrNotAString() {
        #expect(HeraldReceipt(userInfo: ["aps": ["alert": "Hi"]]) == nil)
        #expect(HeraldReceipt(userInfo: ["herald": 42]) == nil)
        #expect(HeraldReceipt(userInfo: ["herald": ["token": "AQAB"]]) == nil)
        #expect(HeraldReceipt(userInfo: ["herald": ["AQAB"]]) == nil)
        #expect(HeraldReceipt(payload: Data(#"{"herald":42}"#.utf8)) == nil)
        #expect(HeraldReceipt(payload: Data(#"{"herald":null}"#.utf8)) == nil)
        #expect(HeraldReceipt(payload: Data(#"{"aps":{"herald":"AQAB"}}"#.utf8)) == nil)
        #expect(HeraldReceipt(payload: Data(#"["herald","AQAB"]"#.utf8)) == nil)
        #expect(HeraldReceipt(payload: Data("not json".utf8)) == nil)
    }

    @Test("A response's action identifier names its event")
    func actionIdentifiers() {
        #expect(HeraldEvent.Kind(actionIdentifier: "com.apple.UNNotificationDefaultActionIdentifier") == .opened)
        #expect(HeraldEvent.Kind(actionIdentifier: "com.apple.UNNotificationDismissActionIdentifier") == .dismissed)
        #expect(HeraldEvent.Kind(actionIdentifier: "reply") == .clicked(action: "reply"))
        #expect(HeraldEvent.Kind.clicked(action: "reply").name == "clicked")
        #expect(HeraldEvent.Kind.clicked(action: "reply").action == "reply")
        #expect(HeraldEvent.Kind.opened.action == nil)
    }
}
