import Foundation
import ServiceKit

/// Settings of `study` beyond the platform's (docs/configuration.md).
struct StudySettings: Sendable {
    /// The Firebase project whose ID tokens are accepted (`aud`); empty refuses every request.
    var firebaseProjectId: String
    /// Google's secure-token key set (a JWKS), or a stand-in's.
    var firebaseKeySetURL: String

    init(_ settings: ServiceSettings) throws {
        firebaseProjectId = try settings.string("study.firebase-project-id").trimmingCharacters(in: .whitespaces)
        firebaseKeySetURL = try settings.string("study.firebase-jwks-url")
        guard let url = URL(string: firebaseKeySetURL), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw StartupError("study.firebase-jwks-url must be an http(s) URL (got '\(firebaseKeySetURL)')")
        }
        guard firebaseProjectId.utf8.count <= 128, !firebaseProjectId.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw StartupError("study.firebase-project-id must be a Firebase project id")
        }
    }
}
