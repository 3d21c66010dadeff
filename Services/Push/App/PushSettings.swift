import Foundation
import ServiceKit

/// Settings of `push` beyond the platform's (docs/configuration.md, docs/push.md).
struct PushSettings: Sendable {
    /// FCM HTTP v1 base (`https://fcm.googleapis.com`).
    var fcmURL: String
    /// The Firebase service account (from `push.fcm-credentials-file`); nil: FCM is off.
    var fcmAccount: FCMServiceAccount?
    /// APNs (token-based); nil: APNs is off.
    var apns: APNsSettings?
    /// Attempts per notification before it is dead-lettered.
    var maxAttempts: Int
    /// Provider requests in flight at once.
    var concurrency: Int
    /// Longest one provider request may take.
    var requestTimeout: Duration
    /// How long a leased notification is another replica's before it may be sent again.
    var leaseSeconds: Int
    /// How long the planner's poll keeps collecting messages after its first: the messages of a
    /// poll are planned together (two statements for the run).
    var plannerLingerMilliseconds: Int

    init(_ settings: ServiceSettings) throws {
        fcmURL = try settings.string("push.fcm-url")
        while fcmURL.hasSuffix("/") { fcmURL.removeLast() }
        guard let url = URL(string: fcmURL), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw StartupError("push.fcm-url must be an http(s) URL (got '\(fcmURL)')")
        }
        let credentials = try settings.string("push.fcm-credentials-file")
        fcmAccount = credentials.isEmpty ? nil : try FCMServiceAccount(file: credentials)
        apns = try Self.apns(settings)
        maxAttempts = try settings.int("push.max-attempts")
        guard (1...100).contains(maxAttempts) else { throw StartupError("push.max-attempts must be 1…100, not \(maxAttempts)") }
        concurrency = try settings.int("push.concurrency")
        guard (1...1_000).contains(concurrency) else { throw StartupError("push.concurrency must be 1…1000, not \(concurrency)") }
        let timeout = try settings.int("push.request-timeout-ms")
        guard timeout >= 100 else { throw StartupError("push.request-timeout-ms must be at least 100, not \(timeout)") }
        requestTimeout = .milliseconds(timeout)
        plannerLingerMilliseconds = try settings.int("push.planner-linger-ms")
        guard (0...1_000).contains(plannerLingerMilliseconds) else {
            throw StartupError("push.planner-linger-ms must be 0…1000, not \(plannerLingerMilliseconds)")
        }
        leaseSeconds = try settings.int("push.lease-seconds")
        guard leaseSeconds * 1_000 > timeout else {
            throw StartupError(
                "push.lease-seconds (\(leaseSeconds)) must outlast push.request-timeout-ms (\(timeout)): a send still running would be sent again")
        }
    }
}

extension PushSettings {
    static func apns(_ settings: ServiceSettings) throws -> APNsSettings? {
        let keyFile = try settings.string("push.apns-key-file")
        guard !keyFile.isEmpty else { return nil }
        guard let key = try? String(contentsOfFile: keyFile, encoding: .utf8) else { throw StartupError("push.apns-key-file: cannot read \(keyFile)") }
        var url = try settings.string("push.apns-url")
        while url.hasSuffix("/") { url.removeLast() }
        guard let parsed = URL(string: url), parsed.scheme == "https" || parsed.scheme == "http", parsed.host != nil else {
            throw StartupError("push.apns-url must be an http(s) URL (got '\(url)')")
        }
        let keyId = try settings.string("push.apns-key-id")
        let teamId = try settings.string("push.apns-team-id")
        let topic = try settings.string("push.apns-topic")
        guard !keyId.isEmpty, !teamId.isEmpty, !topic.isEmpty else {
            throw StartupError("with push.apns-key-file set, push.apns-key-id, push.apns-team-id and push.apns-topic are required")
        }
        let caFile = try settings.string("push.apns-ca-file")
        var ca: String?
        if !caFile.isEmpty {
            guard let text = try? String(contentsOfFile: caFile, encoding: .utf8) else { throw StartupError("push.apns-ca-file: cannot read \(caFile)") }
            ca = text
        }
        return APNsSettings(url: url, keyPEM: key, keyId: keyId, teamId: teamId, topic: topic, caPEM: ca)
    }
}

/// The fields of a Google service-account JSON key that FCM's OAuth2 grant needs. The private
/// key is a secret: never logged (`description` leaves it out).
struct FCMServiceAccount: Sendable, Decodable, CustomStringConvertible {
    var project_id: String
    var private_key_id: String?
    var private_key: String
    var client_email: String
    var token_uri: String

    init(file path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StartupError("push.fcm-credentials-file: cannot read \(path)")
        }
        do {
            self = try JSONDecoder().decode(Self.self, from: data)
        } catch {
            throw StartupError("push.fcm-credentials-file \(path) is not a service-account JSON key (project_id, private_key, client_email, token_uri)")
        }
        guard let url = URL(string: token_uri), let scheme = url.scheme, ["http", "https"].contains(scheme) else {
            throw StartupError("push.fcm-credentials-file: token_uri is not an http(s) URL")
        }
    }

    var description: String { "service account \(client_email) of \(project_id)" }
}
