import HeraldCore

/// An error the mock FCM answers with, in Google's shape (`google.rpc.Status`, as FCM HTTP v1
/// answers): `{"error": {"code": 404, "message": "…", "status": "NOT_FOUND", "details":
/// [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode":
/// "UNREGISTERED"}]}}`, or with a `google.rpc.BadRequest` detail naming the message's field.
struct MockFCMRejection: Error, Sendable {
    var status: Int
    var message: String
    /// Google's canonical code name: `INVALID_ARGUMENT`, `UNAUTHENTICATED`, …
    var googleStatus: String
    /// FCM's `errorCode`, when the answer has an `FcmError` detail.
    var fcmErrorCode: String?
    /// The field a `BadRequest` detail names, with its description.
    var fieldViolation: (field: String, description: String)?
    var retryAfterSeconds: Int?

    /// What the mock counts it under: the FCM error code, or Google's status.
    var reason: String { fcmErrorCode ?? googleStatus }

    static let unauthenticated = Self(
        status: 401,
        message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
        googleStatus: "UNAUTHENTICATED")
    static let unregistered = Self(status: 404, message: "Requested entity was not found.", googleStatus: "NOT_FOUND", fcmErrorCode: "UNREGISTERED")
    static let invalidToken = Self(
        status: 400, message: "The registration token is not a valid FCM registration token", googleStatus: "INVALID_ARGUMENT", fcmErrorCode: "INVALID_ARGUMENT")
    static let senderIDMismatch = Self(status: 403, message: "SenderId mismatch", googleStatus: "PERMISSION_DENIED", fcmErrorCode: "SENDER_ID_MISMATCH")
    static let thirdPartyAuthError = Self(
        status: 401, message: "Auth error from APNS or Web Push Service", googleStatus: "UNAUTHENTICATED", fcmErrorCode: "THIRD_PARTY_AUTH_ERROR")
    static let unavailable = Self(status: 503, message: "The service is currently unavailable.", googleStatus: "UNAVAILABLE", fcmErrorCode: "UNAVAILABLE")
    static let `internal` = Self(status: 500, message: "Internal error encountered.", googleStatus: "INTERNAL", fcmErrorCode: "INTERNAL")
    static let notFound = Self(status: 404, message: "The requested URL was not found on this server.", googleStatus: "NOT_FOUND")

    static func quotaExceeded(retryAfterSeconds: Int?) -> Self {
        Self(
            status: 429, message: "Quota exceeded for quota metric 'Messages'.", googleStatus: "RESOURCE_EXHAUSTED", fcmErrorCode: "QUOTA_EXCEEDED",
            retryAfterSeconds: retryAfterSeconds.map { max(0, $0) })
    }

    static func permissionDenied(project: String) -> Self {
        Self(
            status: 403, message: "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).",
            googleStatus: "PERMISSION_DENIED")
    }

    /// A 400 about a field of the message (`google.rpc.BadRequest`), never about the token.
    static func badRequest(field: String, description: String) -> Self {
        Self(status: 400, message: description, googleStatus: "INVALID_ARGUMENT", fieldViolation: (field, description))
    }

    /// The answer's JSON.
    var body: [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.key("code")
        writer.int(status)
        writer.key("message")
        writer.string(message)
        writer.key("status")
        writer.string(googleStatus)
        if fcmErrorCode != nil || fieldViolation != nil {
            writer.key("details")
            writer.beginArray()
            if let fcmErrorCode {
                writer.value(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(fcmErrorCode)])
            }
            if let fieldViolation {
                writer.value([
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [["field": .string(fieldViolation.field), "description": .string(fieldViolation.description)]],
                ])
            }
            writer.endArray()
        }
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }
}
