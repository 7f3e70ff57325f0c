/// One notification: a device token, the request headers and the encoded payload.
///
/// Build the payload once and share its ``EncodedPayload`` across notifications: it is encoded
/// once, not per token.
public struct PushNotification: Sendable, Hashable {
    /// Where it goes.
    public var token: DeviceToken
    /// The APNs headers (`authorization` is added by the client).
    public var headers: PushHeaders
    /// The request body.
    public var payload: EncodedPayload

    public init(token: DeviceToken, headers: PushHeaders, payload: EncodedPayload) {
        self.token = token
        self.headers = headers
        self.payload = payload
    }

    /// A notification whose payload is encoded now.
    public init(token: DeviceToken, headers: PushHeaders, payload: Payload) throws(PayloadError) {
        self.init(token: token, headers: headers, payload: try payload.encode())
    }

    /// Refuses locally what APNs would refuse, with the reason it would give: header rules
    /// (``PushHeaders/validate()``) and the size limit of the push type (§1.8).
    public func validate() throws(APNSError) {
        try headers.validate()
        try validatePayloadSize()
    }

    /// The size limit of the push type alone (§1.8): for a notification whose headers already
    /// passed ``PushHeaders/validate()`` (a bulk send's shared headers).
    package func validatePayloadSize() throws(APNSError) {
        try payload.checkSize(limit: headers.pushType.maximumPayloadSize)
    }

    /// `:path`: `/3/device/<token hex>` (apns-spec §1.4).
    public var path: String { "/3/device/" + token.hex }

    /// The HTTP/2 request for this notification. `authorization` is `bearer <JWT>` with token
    /// auth, `nil` with certificate auth.
    public func request(authorization: String?) -> APNSRequest {
        var fields: [(name: String, value: String)] = []
        if let authorization { fields.append(("authorization", authorization)) }
        fields.append(contentsOf: headers.fields)
        return APNSRequest(path: path, headerFields: fields, body: payload.bytes)
    }
}

/// An HTTP/2 request to APNs, without transport: what the client sends and `--dry-run` prints.
public struct APNSRequest: Sendable {
    /// Always `POST` for a notification.
    public var method: String = "POST"
    /// `:path`.
    public var path: String
    /// The `authorization` and `apns-*` header fields, in the order sent.
    public var headerFields: [(name: String, value: String)]
    /// The body.
    public var body: [UInt8]

    public init(method: String = "POST", path: String, headerFields: [(name: String, value: String)], body: [UInt8]) {
        self.method = method
        self.path = path
        self.headerFields = headerFields
        self.body = body
    }

    /// The value of the first field named `name`.
    public subscript(header name: String) -> String? {
        headerFields.first { $0.name == name }?.value
    }
}
