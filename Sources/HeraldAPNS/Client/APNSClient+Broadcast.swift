import HeraldCore
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// APNs accepted a broadcast.
public struct BroadcastResponse: Sendable, Hashable {
    /// `apns-request-id`: the one sent, or the one APNs made.
    public var requestID: String
}

extension APNSClient {
    // Broadcast push and channel management, iOS 18 (apns-spec §1.9). Channel management lives on
    // its own hosts: make a client with `.channelManagementProduction` or `.channelManagementSandbox`.

    /// Sends a broadcast to every device subscribed to a channel; retried by reason like a notification.
    public func send(_ broadcast: BroadcastNotification, logger: Logger? = nil) async throws -> BroadcastResponse {
        try broadcast.validate()
        let response = try await perform(
            OtherRequest(
                method: "POST", path: broadcast.path, headers: broadcast.headerFields, body: broadcast.payload.bytes,
                expiration: broadcast.expiration?.deadline
            ),
            logger: logger
        )
        return BroadcastResponse(requestID: response.requestID ?? broadcast.requestID?.uuidString.lowercased() ?? "")
    }

    /// Creates a channel for the app's Live Activities; APNs answers 201 with its ID.
    public func createChannel(bundleID: String, storagePolicy: ChannelStoragePolicy, requestID: UUID? = nil) async throws -> BroadcastChannel {
        var body = JSONWriter(capacity: 64)
        body.beginObject()
        body.key("message-storage-policy")
        body.int(storagePolicy.rawValue)
        body.key("push-type")
        body.string("LiveActivity")
        body.endObject()
        let response = try await perform(
            OtherRequest(method: "POST", path: try Self.channelsPath(bundleID), headers: Self.requestIDHeader(requestID), body: body.bytes, expiration: nil)
        )
        guard let id = response.channelID, !id.isEmpty else {
            throw APNSClientError(.protocolError, "the server created a channel but sent no apns-channel-id")
        }
        return BroadcastChannel(id: id, storagePolicy: storagePolicy)
    }

    /// Reads a channel's configuration.
    public func channel(_ channelID: String, bundleID: String) async throws -> BroadcastChannel {
        let response = try await perform(
            OtherRequest(
                method: "GET", path: try Self.channelsPath(bundleID), headers: [("apns-channel-id", channelID)], body: nil, expiration: nil
            )
        )
        let json = try? JSONValue(parsing: response.body)
        guard let policy = json?["message-storage-policy"]?.intValue.flatMap(ChannelStoragePolicy.init(rawValue:)) else {
            throw APNSClientError(.protocolError, "the channel description has no valid message-storage-policy")
        }
        return BroadcastChannel(id: channelID, storagePolicy: policy, pushType: json?["push-type"]?.stringValue ?? "LiveActivity")
    }

    /// Deletes a channel, for good; messages already stored may still be delivered.
    public func deleteChannel(_ channelID: String, bundleID: String) async throws {
        _ = try await perform(
            OtherRequest(
                method: "DELETE", path: try Self.channelsPath(bundleID), headers: [("apns-channel-id", channelID)], body: nil, expiration: nil
            )
        )
    }

    /// The IDs of every channel of the app in this environment (at most 10 000).
    public func channels(bundleID: String) async throws -> [String] {
        let response = try await perform(
            OtherRequest(method: "GET", path: "/1/apps/\(try Self.checkBundleID(bundleID))/all-channels", headers: [], body: nil, expiration: nil)
        )
        guard case .array(let items) = (try? JSONValue(parsing: response.body))?["channels"] ?? .null else {
            throw APNSClientError(.protocolError, "the channel list is not {\"channels\": [...]}")
        }
        return items.compactMap(\.stringValue)
    }

    private static func channelsPath(_ bundleID: String) throws -> String {
        "/1/apps/\(try checkBundleID(bundleID))/channels"
    }

    private static func checkBundleID(_ bundleID: String) throws -> String {
        guard !bundleID.isEmpty, !bundleID.contains("/") else {
            throw APNSError(local: .badPath, "a bundle ID is needed, got '\(bundleID)'")
        }
        return bundleID
    }

    private static func requestIDHeader(_ requestID: UUID?) -> [(name: String, value: String)] {
        requestID.map { [("apns-request-id", $0.uuidString.lowercased())] } ?? []
    }
}
