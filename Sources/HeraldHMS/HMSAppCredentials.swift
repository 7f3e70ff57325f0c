import HeraldCore
import HeraldTransport

/// An app's OAuth 2.0 client credentials (AppGallery Connect → Project settings → the app's
/// OAuth 2.0 client ID): exchanged at Huawei's token endpoint for the access tokens the Android
/// API (v1) takes (Huawei's "基于OAuth 2.0开放鉴权" client-credentials mode,
/// https://developer.huawei.com/consumer/cn/doc/HMSCore-Guides/oauth2-0000001212610981).
///
/// Printing it shows the client ID only, never the secret.
public struct HMSAppCredentials: Sendable {
    /// `client_id`: the OAuth 2.0 client ID, also the `{clientid}` of `/v1/{clientid}/messages:send`.
    public var clientID: String
    /// `client_secret`.
    let clientSecret: String
    /// Where the credentials are exchanged; Huawei's by default, a mock's in tests.
    public var tokenURI: String

    /// Huawei's OAuth 2.0 token endpoint.
    public static let huaweiTokenURI = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    /// The longest secret taken (Huawei's are 64 hex digits).
    public static let maximumSecretCount = 512

    /// Credentials held in memory. The client ID must be 1 to 64 digits: Huawei's token endpoint
    /// refuses any other (error 1101, sub-error 20002, "^[0-9]{1,64}$",
    /// https://developer.huawei.com/consumer/en/doc/doccenter-references/api/account-server-error-code/).
    public init(clientID: String, clientSecret: String, tokenURI: String = Self.huaweiTokenURI) throws(HMSError) {
        guard (1...64).contains(clientID.utf8.count), clientID.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw HMSError(.invalidCredentials, "the client ID must be 1 to 64 digits (AppGallery Connect's OAuth 2.0 client ID)", field: "clientID")
        }
        guard !clientSecret.isEmpty, clientSecret.utf8.count <= Self.maximumSecretCount, clientSecret.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HMSError(.invalidCredentials, "the client secret must be 1 to \(Self.maximumSecretCount) visible ASCII characters", field: "clientSecret")
        }
        guard ServiceEndpoint(tokenURI) != nil else {
            throw HMSError(
                .invalidCredentials, "the token URI must be an https URL (http only to a loopback address); got \(PeerText(tokenURI, limit: 100))",
                field: "tokenURI")
        }
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.tokenURI = tokenURI
    }
}

extension HMSAppCredentials: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "HMSAppCredentials(clientID: \(clientID))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["clientID": clientID, "tokenURI": tokenURI]) }
}
