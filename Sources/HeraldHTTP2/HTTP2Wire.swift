import NIOCore

// The parts of HTTP/2 (RFC 9113) that APNs traffic uses, written for this one job: many small
// request/response exchanges on a few long-lived connections. Header compression is NIOHPACK's
// (swift-nio-http2); framing, settings and flow control are here, so a request costs a few memory
// copies instead of a trip through a general-purpose stream state machine.

/// An HTTP/2 frame type (RFC 9113 §6).
package enum HTTP2FrameType: UInt8, Sendable {
    case data = 0x0
    case headers = 0x1
    case priority = 0x2
    case rstStream = 0x3
    case settings = 0x4
    case pushPromise = 0x5
    case ping = 0x6
    case goAway = 0x7
    case windowUpdate = 0x8
    case continuation = 0x9
}

/// Frame flags (RFC 9113 §6).
package enum HTTP2Flag {
    package static let endStream: UInt8 = 0x1
    package static let ack: UInt8 = 0x1
    package static let endHeaders: UInt8 = 0x4
    package static let padded: UInt8 = 0x8
    package static let priority: UInt8 = 0x20
}

/// An HTTP/2 error code (RFC 9113 §7).
package struct HTTP2ErrorCode: Hashable, Sendable, CustomStringConvertible {
    package var rawValue: UInt32
    package init(_ rawValue: UInt32) { self.rawValue = rawValue }

    package static let noError = HTTP2ErrorCode(0x0)
    package static let protocolError = HTTP2ErrorCode(0x1)
    package static let internalError = HTTP2ErrorCode(0x2)
    package static let flowControlError = HTTP2ErrorCode(0x3)
    package static let settingsTimeout = HTTP2ErrorCode(0x4)
    package static let streamClosed = HTTP2ErrorCode(0x5)
    package static let frameSizeError = HTTP2ErrorCode(0x6)
    package static let refusedStream = HTTP2ErrorCode(0x7)
    package static let cancel = HTTP2ErrorCode(0x8)
    package static let compressionError = HTTP2ErrorCode(0x9)
    package static let connectError = HTTP2ErrorCode(0xA)
    package static let enhanceYourCalm = HTTP2ErrorCode(0xB)
    package static let inadequateSecurity = HTTP2ErrorCode(0xC)
    package static let http11Required = HTTP2ErrorCode(0xD)

    package var description: String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
            "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        return rawValue < names.count ? names[Int(rawValue)] : "0x" + String(rawValue, radix: 16)
    }
}

/// A SETTINGS parameter (RFC 9113 §6.5.2).
package enum HTTP2SettingID: UInt16, Sendable {
    case headerTableSize = 0x1
    case enablePush = 0x2
    case maxConcurrentStreams = 0x3
    case initialWindowSize = 0x4
    case maxFrameSize = 0x5
    case maxHeaderListSize = 0x6
}

/// A peer broke the protocol: the connection ends with GOAWAY and this code.
package struct HTTP2ConnectionError: Error, Hashable, Sendable, CustomStringConvertible {
    package var code: HTTP2ErrorCode
    package var message: String
    package init(_ code: HTTP2ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
    package var description: String { "HTTP/2 \(code): \(message)" }
}

/// The client connection preface (RFC 9113 §3.4).
package let http2ClientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

/// The largest window (RFC 9113 §6.9.1).
package let http2MaximumWindow = Int(Int32.max)

/// A stream ID (31 bits).
package typealias HTTP2StreamNumber = UInt32
