import HeraldCore
import HeraldHTTP2
import HeraldIdentity
import Logging
import NIOCore
import NIOHPACK
import NIOSSL
import NIOTLS
import X509

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Serves one client connection: reads request frames, answers like APNs, and plays the script's
/// faults. Built on ``HTTP2Connection`` over the TLS bytes, so the mock is fast enough to be a
/// benchmark target.
final class MockConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Shared: Sendable {
        var state: MockServerState
        var channels: MockChannelStore
        var validator: MockRequestValidator
        var sandbox: Bool
        var mutualTLS: Bool
        var maximumConcurrentStreams: Int
        var now: @Sendable () -> Date
        var logger: Logger
    }

    private struct PendingStream {
        var head: MockRequestHead
        var body: [UInt8] = []
        var bodySize = 0
        var fault: MockFault?
        var answered = false
    }


    private let shared: Shared
    private let connection: Int
    private var http2: HTTP2Connection
    private var auth = MockConnectionAuth()
    /// Makes up the ids APNs would (apns-id, apns-unique-id, apns-request-id).
    private var ids = MockIdentifiers()
    private var streams: [HTTP2StreamNumber: PendingStream] = [:]
    private var streamsSeen = 0
    private var highestStreamID: HTTP2StreamNumber = 0
    private var lastProcessedStreamID: HTTP2StreamNumber = 0
    private var goingAway = false
    private var closing = false
    private var output = ByteBuffer()
    private var events: [HTTP2Connection.Event] = []
    private var data = HTTP2DataSender()
    private var streamLimit: Int
    private var pendingStreamLimits: [Int] = []
    private let connectionEvents: (goAway: (count: Int, reason: String)?, drop: Int?, limits: [(afterStreams: Int, limit: Int)])
    private var context: ChannelHandlerContext?
    private var started = false

    init(shared: Shared) {
        self.shared = shared
        self.connection = shared.state.nextConnectionNumber()
        self.connectionEvents = shared.state.connectionScript(connection: connection)
        var settings = HTTP2Connection.Settings()
        settings.maxConcurrentStreams = shared.maximumConcurrentStreams
        settings.initialWindowSize = 1 << 20
        settings.maxHeaderListSize = 16 << 10
        self.http2 = HTTP2Connection(role: .server, local: settings)
        self.streamLimit = shared.maximumConcurrentStreams
        output.reserveCapacity(64 << 10)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        http2.start(into: &output)
        flush(context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event, shared.mutualTLS {
            if let tls = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
                let peer = tls.peerCertificate, let certificate = try? Certificate(derEncoded: peer.toDERBytes())
            {
                auth.certificate = (certificate.apnsSubjectUID, certificate.apnsListedTopics)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        do {
            try http2.receive(&bytes, events: &events, output: &output)
        } catch {
            shared.logger.debug("client broke HTTP/2", metadata: ["error": "\(error)"])
            output.writeHTTP2GoAway(lastStreamID: highestStreamID, code: error.code, debugData: Array(error.message.utf8.prefix(200)))
            flush(context)
            context.close(promise: nil)
            return
        }
        for event in events { handle(event, context: context) }
        events.removeAll(keepingCapacity: true)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush(context)
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        streams = [:]
        context.fireChannelInactive()
    }

    // MARK: HTTP/2 events

    private func handle(_ event: HTTP2Connection.Event, context: ChannelHandlerContext) {
        switch event {
        case .headers(let streamID, let headers, let endStream):
            if let stream = streams[streamID] {
                // Trailers: the request ends here.
                _ = stream
                if endStream { complete(streamID, context: context) }
            } else {
                receivedHeaders(headers, streamID: streamID, endStream: endStream, context: context)
            }
        case .data(let streamID, let data, let endStream):
            guard var stream = streams[streamID], !stream.answered else { return }
            stream.bodySize += data.readableBytes
            // Keep the body only up to just past the largest limit: enough to record and to size-check.
            if stream.body.count <= 5121 { stream.body.append(contentsOf: data.readableBytesView.prefix(5122 - stream.body.count)) }
            streams[streamID] = stream
            if endStream {
                complete(streamID, context: context)
            } else if stream.bodySize > PushType.voip.maximumPayloadSize {
                // Too large whatever the push type: answer now rather than read the rest.
                answer(streamID, context: context)
                output.writeHTTP2RstStream(streamID: streamID, code: .noError)
            }
        case .resetStream(let streamID, _):
            streams[streamID] = nil
            data.drop(streamID)
        case .settings(_, _, let delta):
            if delta != 0 { data.windowGrew(initialWindowDelta: delta, connection: &http2, output: &output) }
        case .settingsAck:
            // A lowered stream limit binds once the client has seen it.
            if !pendingStreamLimits.isEmpty { streamLimit = pendingStreamLimits.removeFirst() }
        case .streamWindowUpdate(let streamID, let increment):
            data.windowGrew(streamID: streamID, increment: increment, connection: &http2, output: &output)
        case .connectionWindowUpdate:
            data.windowGrew(connection: &http2, output: &output)
        case .pingAck, .goAway:
            break
        }
    }

    // MARK: Requests

    private func receivedHeaders(_ headers: HPACKHeaders, streamID: HTTP2StreamNumber, endStream: Bool, context: ChannelHandlerContext) {
        guard streamID % 2 == 1, streamID > highestStreamID else {
            fail(context, .protocolError, "stream \(streamID) is not a new client stream")
            return
        }
        highestStreamID = streamID
        guard !goingAway else { return }  // above the GOAWAY's last stream: not processed
        let activeStreams = streams.count
        if activeStreams >= streamLimit {
            shared.state.countRefusedStream()
            output.writeHTTP2RstStream(streamID: streamID, code: .refusedStream)
            return
        }
        shared.state.countRequest()
        let index = streamsSeen
        streamsSeen += 1

        if let goAway = connectionEvents.goAway, index == goAway.count {
            sendGoAway(reason: goAway.reason, context: context)
            return
        }
        if let drop = connectionEvents.drop, index == drop {
            context.close(promise: nil)
            return
        }
        for change in connectionEvents.limits where change.afterStreams == index {
            setStreamLimit(change.limit)
        }

        let head = MockRequestHead(headers)
        var stream = PendingStream(head: head)
        if let token = head.token {
            stream.fault = shared.state.fault(for: token)
        }
        switch stream.fault {
        case .dropConnection:
            context.close(promise: nil)
            return
        case .goAway(let reason):
            sendGoAway(reason: reason, context: context)
            return
        case .setMaximumConcurrentStreams(let limit):
            setStreamLimit(limit)
        case .refuseStream:
            shared.state.countRefusedStream()
            output.writeHTTP2RstStream(streamID: streamID, code: .refusedStream)
            return
        default:
            break
        }
        lastProcessedStreamID = streamID
        streams[streamID] = stream
        if streamLimit != shared.maximumConcurrentStreams {
            shared.state.openStreams(streams.count, underLimit: streamLimit)
        }
        if case .answerBeforeBody = stream.fault {
            // Answer now, then reset the stream with NO_ERROR: the client must take the answer.
            answer(streamID, context: context)
            output.writeHTTP2RstStream(streamID: streamID, code: .noError)
            return
        }
        if endStream { complete(streamID, context: context) }
    }

    private func complete(_ streamID: HTTP2StreamNumber, context: ChannelHandlerContext) {
        guard let stream = streams[streamID], !stream.answered else { return }
        switch stream.fault {
        case .noResponse:
            streams[streamID]?.answered = true  // hangs until the client gives up
        case .delay(let delay):
            streams[streamID]?.answered = true
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            let (seconds, attoseconds) = delay.components
            context.eventLoop.scheduleTask(in: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)) {
                guard let context = handler.value.context else { return }
                handler.value.answer(streamID, context: context, ignoringFault: true, stream: stream)
                handler.value.flush(context)
            }
        default:
            answer(streamID, context: context)
        }
    }

    private func answer(_ streamID: HTTP2StreamNumber, context: ChannelHandlerContext, ignoringFault: Bool = false, stream known: PendingStream? = nil) {
        guard let stream = known ?? streams[streamID] else { return }
        streams[streamID] = nil
        let token = stream.head.token.map(String.init) ?? ""
        if !ignoringFault, case .reject(let status, let reason, let timestamp) = stream.fault {
            respond(streamID, rejection: MockRejection(status: status, reason: reason, timestamp: timestamp), apnsID: stream.head.apnsID, token: token, context: context)
            return
        }
        let bodySize = stream.fault == .answerBeforeBody ? 1 : stream.bodySize
        if stream.head.route != .device {
            answerOther(streamID, stream: stream, bodySize: bodySize, context: context)
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
            respond(streamID, rejection: rejection, apnsID: stream.head.apnsID, token: token, context: context)
        case .success(let accepted):
            let frameStart = output.writerIndex
            output.writeHTTP2FrameHeader(length: 0, type: .headers, flags: HTTP2Flag.endHeaders | HTTP2Flag.endStream, streamID: streamID)
            let blockStart = output.writerIndex
            http2.encoder.beginBlock(into: &output)
            http2.encoder.indexed(HPACKBlockEncoder.Static.status200, into: &output)
            http2.encoder.literal(name: "apns-id", value: accepted.apnsID, into: &output)
            if shared.sandbox {
                http2.encoder.literal(name: "apns-unique-id", value: ids.next(), into: &output)
            }
            patchLength(frameStart: frameStart, blockStart: blockStart)
            let connection = self.connection
            shared.state.accepted(
                AcceptedNotification(
                    token: accepted.token, apnsID: accepted.apnsID, topic: accepted.topic, pushType: accepted.pushType.rawValue,
                    priority: accepted.priority, payload: stream.body, connection: connection
                )
            )
        }
        closeIfGoneAway(context)
    }

    /// Broadcasts and channel management (apns-spec §1.9).
    private func answerOther(_ streamID: HTTP2StreamNumber, stream: PendingStream, bodySize: Int, context: ChannelHandlerContext) {
        let head = stream.head
        let requestID = head.requestID.flatMap { try? PushHeaders.apnsID($0) }.map(MockIdentifiers.format) ?? ids.next()
        func reject(_ reason: String) {
            respond(streamID, rejection: .reason(reason), apnsID: nil, token: "", context: context, requestID: requestID)
        }
        switch head.route {
        case .broadcast(let bundleID):
            switch shared.validator.validateBroadcast(head, bundleID: bundleID, body: bodySize, auth: &auth, channels: shared.channels, now: shared.now(), ids: &ids) {
            case .failure(let rejection):
                respond(streamID, rejection: rejection, apnsID: nil, token: "", context: context, requestID: requestID)
            case .success(let id):
                shared.channels.countBroadcast()
                answer(streamID, status: 200, headers: [("apns-request-id", id)], body: nil)
            }
        case .channels(let bundleID):
            if let rejection = shared.validator.authenticate(head, auth: &auth, now: shared.now()) {
                respond(streamID, rejection: rejection, apnsID: nil, token: "", context: context, requestID: requestID)
                return
            }
            switch head.method {
            case "POST":
                guard let json = try? JSONValue(parsing: stream.body), case .object = json else { return reject("BadRequestPayload") }
                guard let policy = json["message-storage-policy"]?.intValue.flatMap(ChannelStoragePolicy.init(rawValue:)),
                    json["push-type"]?.stringValue?.lowercased() == "liveactivity"
                else { return reject("BadRequestParams") }
                guard let id = shared.channels.create(bundleID: bundleID, policy: policy) else { return reject("CannotCreateChannelConfig") }
                answer(streamID, status: 201, headers: [("apns-request-id", requestID), ("apns-channel-id", id)], body: nil)
            case "GET", "DELETE":
                guard let id = head.channelID, !id.isEmpty else { return reject("MissingChannelId") }
                guard let policy = shared.channels.policy(of: id, bundleID: bundleID) else { return reject("ChannelNotRegistered") }
                if head.method == "DELETE" {
                    _ = shared.channels.delete(id, bundleID: bundleID)
                    answer(streamID, status: 204, headers: [("apns-request-id", requestID)], body: nil)
                } else {
                    let body: JSONValue = ["message-storage-policy": .int(policy.rawValue), "push-type": "LiveActivity"]
                    answer(streamID, status: 200, headers: [("apns-request-id", requestID)], body: Array(body.jsonString.utf8))
                }
            default:
                reject("MethodNotAllowed")
            }
        case .allChannels(let bundleID):
            if let rejection = shared.validator.authenticate(head, auth: &auth, now: shared.now()) {
                respond(streamID, rejection: rejection, apnsID: nil, token: "", context: context, requestID: requestID)
                return
            }
            guard head.method == "GET" else { return reject("MethodNotAllowed") }
            let body: JSONValue = ["channels": .array(shared.channels.list(bundleID: bundleID).map { .string($0) })]
            answer(streamID, status: 200, headers: [("apns-request-id", requestID)], body: Array(body.jsonString.utf8))
        case .device, .unknown:
            reject(head.method == "POST" || head.method == "GET" || head.method == "DELETE" ? "BadPath" : "MethodNotAllowed")
        }
    }

    /// A success answer with extra headers and an optional JSON body.
    private func answer(_ streamID: HTTP2StreamNumber, status: Int, headers: [(String, String)], body: [UInt8]?) {
        let frameStart = output.writerIndex
        output.writeHTTP2FrameHeader(length: 0, type: .headers, flags: HTTP2Flag.endHeaders | (body == nil ? HTTP2Flag.endStream : 0), streamID: streamID)
        let blockStart = output.writerIndex
        http2.encoder.beginBlock(into: &output)
        if let index = HPACKBlockEncoder.Static.statusIndex[status] {
            http2.encoder.indexed(index, into: &output)
        } else {
            http2.encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.status, value: String(status), into: &output)
        }
        if body != nil {
            http2.encoder.indexing(name: "content-type", value: "application/json", staticNameIndex: HPACKBlockEncoder.Static.contentType, into: &output)
        }
        for (name, value) in headers { http2.encoder.literal(name: name, value: value, into: &output) }
        patchLength(frameStart: frameStart, blockStart: blockStart)
        if let body { sendBody(streamID: streamID, ByteBuffer(bytes: body)) }
    }

    private func respond(
        _ streamID: HTTP2StreamNumber, rejection: MockRejection, apnsID: String?, token: String, context: ChannelHandlerContext,
        requestID: String? = nil
    ) {
        let frameStart = output.writerIndex
        output.writeHTTP2FrameHeader(length: 0, type: .headers, flags: HTTP2Flag.endHeaders, streamID: streamID)
        let blockStart = output.writerIndex
        http2.encoder.beginBlock(into: &output)
        if let index = HPACKBlockEncoder.Static.statusIndex[rejection.status] {
            http2.encoder.indexed(index, into: &output)
        } else {
            http2.encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.status, value: String(rejection.status), into: &output)
        }
        http2.encoder.indexing(name: "content-type", value: "application/json", staticNameIndex: HPACKBlockEncoder.Static.contentType, into: &output)
        if let requestID {
            http2.encoder.literal(name: "apns-request-id", value: requestID, into: &output)
        } else {
            http2.encoder.literal(name: "apns-id", value: apnsID?.lowercased() ?? ids.next(), into: &output)
        }
        patchLength(frameStart: frameStart, blockStart: blockStart)

        var body = JSONWriter(capacity: 64)
        body.beginObject()
        body.key("reason")
        body.string(rejection.reason)
        if let timestamp = rejection.timestamp {
            body.key("timestamp")  // milliseconds since the epoch (apns-spec §1.6)
            body.int(Int(timestamp.timeIntervalSince1970 * 1000))
        }
        body.endObject()
        sendBody(streamID: streamID, ByteBuffer(bytes: body.bytes))
        shared.state.rejected(RejectedNotification(token: token, status: rejection.status, reason: rejection.reason))
        closeIfGoneAway(context)
    }

    private func patchLength(frameStart: Int, blockStart: Int) {
        let length = output.writerIndex - blockStart
        output.setInteger(UInt8(truncatingIfNeeded: length >> 16), at: frameStart)
        output.setInteger(UInt16(truncatingIfNeeded: length), at: frameStart + 1)
    }

    private func sendBody(streamID: HTTP2StreamNumber, _ bytes: ByteBuffer) {
        data.send(streamID: streamID, body: bytes.readableBytesView, connection: &http2, output: &output)
    }


    // MARK: Connection events

    private func setStreamLimit(_ limit: Int) {
        output.writeHTTP2Settings([(.maxConcurrentStreams, limit)])
        pendingStreamLimits.append(limit)
    }

    private func sendGoAway(reason: String, context: ChannelHandlerContext) {
        goingAway = true
        var debug = JSONWriter(capacity: 32)
        debug.beginObject()
        debug.key("reason")
        debug.string(reason)
        debug.endObject()
        output.writeHTTP2GoAway(lastStreamID: lastProcessedStreamID, code: .noError, debugData: debug.bytes)
        // Streams above the last processed one were never started here.
        for id in streams.keys where id > lastProcessedStreamID { streams[id] = nil }
        closeIfGoneAway(context)
    }

    private func closeIfGoneAway(_ context: ChannelHandlerContext) {
        guard goingAway, !closing else { return }
        // Close once every stream that will be answered has been (hung streams do not count).
        if streams.values.allSatisfy({ $0.answered && $0.fault == .noResponse }) {
            closing = true
            flush(context)
            // Give the last answers and the GOAWAY time to reach the client before closing.
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(100)) {
                handler.value.context?.close(promise: nil)
            }
        }
    }

    private func fail(_ context: ChannelHandlerContext, _ code: HTTP2ErrorCode, _ message: String) {
        output.writeHTTP2GoAway(lastStreamID: highestStreamID, code: code, debugData: Array(message.utf8))
        flush(context)
        context.close(promise: nil)
    }

    private func flush(_ context: ChannelHandlerContext) {
        guard output.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(output), promise: nil)
        output.clear(minimumCapacity: 16 << 10)
    }
}
