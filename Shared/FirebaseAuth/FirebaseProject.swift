import Foundation

/// The Firebase project whose ID tokens a service accepts, and the key set they are checked
/// against: the settings `study.firebase-project-id` and `study.firebase-jwks-url`, read by the
/// `study` service (every request) and the gateway (the study app's Socket.IO handshakes).
public struct FirebaseProject: Sendable, Equatable {
    public static let projectIdSetting = "study.firebase-project-id"
    public static let keySetURLSetting = "study.firebase-jwks-url"
    /// Google's secure-token key set.
    public static let googleKeySetURL = "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com"

    /// Empty: no project (every token is refused).
    public var projectId: String
    public var keySetURL: String

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public init(projectId: String, keySetURL: String) throws(Invalid) {
        self.projectId = projectId.trimmingCharacters(in: .whitespaces)
        self.keySetURL = keySetURL
        guard let url = URL(string: keySetURL), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw Invalid(description: "\(Self.keySetURLSetting) must be an http(s) URL (got '\(keySetURL)')")
        }
        guard self.projectId.utf8.count <= 128, !self.projectId.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw Invalid(description: "\(Self.projectIdSetting) must be a Firebase project id")
        }
    }

    public var isConfigured: Bool { !projectId.isEmpty }
}
