import HeraldCore
import HeraldHTTP2
import NIOCore

// How the mock answers a request it has read whole: a device notification (accepted or rejected
// with APNs's reason), a broadcast, or channel management (apns-spec §1.6-§1.9).
extension MockConnectionHandler {
    func answer(_ streamID: HTTP2StreamNumber, context: ChannelHandlerContext, ignoringFault: Bool = false) {
        guard let stream = streams[streamID] else { return }  // reset meanwhile
        drop(streamID)
        let token = stream.head.token.map(String.init) ?? ""
        if !ignoringFault, case .reject(let status, let reason, let timestamp) = stream.fault {
            respond(streamID, rejection: MockRejection(status: status, reason: reason, timestamp: timestamp), apnsID: stream.head.apnsID, token: token)
            closeIfGoneAway(context)
            return
        }
        let bodySize = stream.fault == .answerBeforeBody ? 1 : stream.bodySize
        if stream.head.route != .device {
            answerOther(streamID, stream: stream, bodySize: bodySize)
            closeIfGoneAway(context)
            return
        }
        let result = shared.validator.validate(
            stream.head, body: bodySize, auth: &auth, unregistered: shared.state.unregistered, now: shared.now(), ids: &ids
        )
        if auth.tokenChanged, let token = auth.currentToken {
            auth.tokenChanged = false
            shared.state.sawProviderToken(token)
        }
        switch result {
        case .failure(let rejection):
            respond(streamID, rejection: rejection, apnsID: stream.head.apnsID, token: token)
        case .success(let accepted):
            let uniqueID = shared.sandbox ? ids.next() : nil
            http2.writeHeaders(streamID: streamID, endStream: true, into: &output) { encoder, block in
                encoder.indexed(HPACKBlockEncoder.Static.status200, into: &block)
                encoder.literal(name: "apns-id", value: accepted.apnsID, into: &block)
                if let uniqueID { encoder.literal(name: "apns-unique-id", value: uniqueID, into: &block) }
            }
            let connection = self.connection
            shared.state.accepted(
                AcceptedNotification(
                    token: accepted.token, apnsID: accepted.apnsID, topic: accepted.topic, pushType: accepted.pushType.rawValue,
                    priority: accepted.priority, payload: stream.body, connection: connection, keyID: auth.certificate == nil ? auth.currentKeyID : nil,
                    collapseID: stream.head.collapseID
                )
            )
        }
        closeIfGoneAway(context)
    }

    /// Broadcasts and channel management (apns-spec §1.9).
    private func answerOther(_ streamID: HTTP2StreamNumber, stream: PendingStream, bodySize: Int) {
        let head = stream.head
        let requestID = head.requestID.flatMap { try? PushHeaders.apnsID($0) }.map(MockIdentifiers.format) ?? ids.next()
        func reject(_ reason: APNSReason) {
            respond(streamID, rejection: .reason(reason), apnsID: nil, token: "", requestID: requestID)
        }
        switch head.route {
        case .broadcast(let bundleID):
            switch shared.validator.validateBroadcast(head, bundleID: bundleID, body: bodySize, auth: &auth, channels: shared.channels, now: shared.now(), ids: &ids) {
            case .failure(let rejection):
                respond(streamID, rejection: rejection, apnsID: nil, token: "", requestID: requestID)
            case .success(let id):
                shared.channels.countBroadcast()
                answer(streamID, status: 200, headers: [("apns-request-id", id)], body: nil)
            }
        case .channels(let bundleID):
            if let rejection = shared.validator.authenticate(head, auth: &auth, now: shared.now()) {
                respond(streamID, rejection: rejection, apnsID: nil, token: "", requestID: requestID)
                return
            }
            switch head.method {
            case "POST":
                guard let json = try? JSONValue(parsing: stream.body), case .object = json else { return reject(.badRequestPayload) }
                guard let policy = json["message-storage-policy"]?.intValue.flatMap(ChannelStoragePolicy.init(rawValue:)),
                    json["push-type"]?.stringValue?.lowercased() == "liveactivity"
                else { return reject(.badRequestParams) }
                guard let id = shared.channels.create(bundleID: bundleID, policy: policy) else { return reject(.cannotCreateChannelConfig) }
                answer(streamID, status: 201, headers: [("apns-request-id", requestID), ("apns-channel-id", id)], body: nil)
            case "GET", "DELETE":
                guard let id = head.channelID, !id.isEmpty else { return reject(.missingChannelId) }
                guard let policy = shared.channels.policy(of: id, bundleID: bundleID) else { return reject(.channelNotRegistered) }
                if head.method == "DELETE" {
                    _ = shared.channels.delete(id, bundleID: bundleID)
                    answer(streamID, status: 204, headers: [("apns-request-id", requestID)], body: nil)
                } else {
                    let body: JSONValue = ["message-storage-policy": .int(policy.rawValue), "push-type": "LiveActivity"]
                    answer(streamID, status: 200, headers: [("apns-request-id", requestID)], body: Array(body.jsonString.utf8))
                }
            default:
                reject(.methodNotAllowed)
            }
        case .allChannels(let bundleID):
            if let rejection = shared.validator.authenticate(head, auth: &auth, now: shared.now()) {
                respond(streamID, rejection: rejection, apnsID: nil, token: "", requestID: requestID)
                return
            }
            guard head.method == "GET" else { return reject(.methodNotAllowed) }
            let body: JSONValue = ["channels": .array(shared.channels.list(bundleID: bundleID).map { .string($0) })]
            answer(streamID, status: 200, headers: [("apns-request-id", requestID)], body: Array(body.jsonString.utf8))
        case .device, .unknown:
            reject(head.method == "POST" || head.method == "GET" || head.method == "DELETE" ? .badPath : .methodNotAllowed)
        }
    }

    /// A success answer with extra headers and an optional JSON body.
    private func answer(_ streamID: HTTP2StreamNumber, status: Int, headers: [(String, String)], body: [UInt8]?) {
        http2.writeHeaders(streamID: streamID, endStream: body == nil, into: &output) { encoder, block in
            encoder.status(status, into: &block)
            if body != nil {
                encoder.indexing(name: "content-type", value: "application/json", staticNameIndex: HPACKBlockEncoder.Static.contentType, into: &block)
            }
            for (name, value) in headers { encoder.literal(name: name, value: value, into: &block) }
        }
        if let body { http2.writeBody(streamID: streamID, body, into: &output) }
    }

    /// An error answer: the status, `apns-id` (or `apns-request-id`), and `{"reason": …}` with the
    /// 410 timestamp in milliseconds (apns-spec §1.6).
    private func respond(_ streamID: HTTP2StreamNumber, rejection: MockRejection, apnsID: String?, token: String, requestID: String? = nil) {
        let id = requestID ?? apnsID?.lowercased() ?? ids.next()
        http2.writeHeaders(streamID: streamID, endStream: false, into: &output) { encoder, block in
            encoder.status(rejection.status, into: &block)
            encoder.indexing(name: "content-type", value: "application/json", staticNameIndex: HPACKBlockEncoder.Static.contentType, into: &block)
            encoder.literal(name: requestID == nil ? "apns-id" : "apns-request-id", value: id, into: &block)
        }
        var body = JSONWriter(capacity: 64)
        body.beginObject()
        body.key("reason")
        body.string(rejection.reason)
        if let timestamp = rejection.timestamp {
            // Milliseconds since the epoch (apns-spec §1.6); a scripted date past 9999 is clamped.
            body.key("timestamp")
            let milliseconds = (timestamp.timeIntervalSince1970 * 1000).rounded()
            body.int(milliseconds.isFinite ? Int(min(max(milliseconds, 0), 253_402_300_799_999)) : 0)
        }
        body.endObject()
        http2.writeBody(streamID: streamID, body.bytes, into: &output)
        shared.state.rejected(RejectedNotification(token: token, status: rejection.status, reason: rejection.reason))
    }
}
