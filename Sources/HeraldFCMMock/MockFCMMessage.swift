import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A message the mock FCM accepted (200), as FCM received it.
public struct MockFCMMessage: Sendable, Hashable {
    /// The registration token it was sent to.
    public var token: String
    /// The `message` object as it came.
    public var message: JSONValue
    /// The name answered: `projects/{project}/messages/{n}`.
    public var name: String
    /// The HTTP version the request came on: 1 (HTTP/1.1) or 2.
    public var httpVersion: Int
    /// When the mock accepted it.
    public var receivedAt: Date

    /// `notification.title`, `notification.body` and `data`, for tests' checks.
    public var title: String? { message["notification"]?["title"]?.stringValue }
    public var body: String? { message["notification"]?["body"]?.stringValue }
    public var data: [String: String] { (message["data"]?.objectValue ?? [:]).compactMapValues(\.stringValue) }
}
