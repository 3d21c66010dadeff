import FirebaseAuth
import Foundation
import ServiceKit

/// Settings of `study` beyond the platform's (docs/configuration.md).
struct StudySettings: Sendable {
    /// The Firebase project whose ID tokens are accepted (`aud`; empty refuses every request) and
    /// Google's secure-token key set (a JWKS), or a stand-in's.
    var firebase: FirebaseProject
    /// How far `POST /v1/queue/search` looks, in meters (the original app: about 700 m).
    var searchRadiusMeters: Int
    /// `fromRecommend` of a search: studies the operator suggests (comma-separated setting).
    var recommendedStudies: [String]
    /// The App Store roots signed transactions must chain to (PEM; nil: purchases are refused).
    var appStoreRootsPEM: String?
    /// The app's bundle id, as in its signed transactions.
    var appStoreBundleId: String
    /// `Production` or `Sandbox`: the transactions' `environment` accepted.
    var appStoreEnvironment: String
    /// The dodge penalty per dodge: 1, 2, then 3 of these (the original app: a minute).
    var dodgePenaltySeconds: Int

    init(_ settings: ServiceSettings) throws {
        do {
            firebase = try FirebaseProject(
                projectId: try settings.string(FirebaseProject.projectIdSetting), keySetURL: try settings.string(FirebaseProject.keySetURLSetting))
        } catch let invalid as FirebaseProject.Invalid {
            throw StartupError(invalid.description)
        }
        searchRadiusMeters = try settings.int("study.search-radius-meters")
        guard (1...50_000).contains(searchRadiusMeters) else { throw StartupError("study.search-radius-meters must be 1–50000") }
        let rootsFile = try settings.string("study.appstore-root-certificates-file")
        if rootsFile.isEmpty {
            appStoreRootsPEM = nil
        } else {
            guard let pem = try? String(contentsOfFile: rootsFile, encoding: .utf8), pem.contains("BEGIN CERTIFICATE") else {
                throw StartupError("study.appstore-root-certificates-file: cannot read PEM certificates at \(rootsFile)")
            }
            appStoreRootsPEM = pem
        }
        appStoreBundleId = try settings.string("study.appstore-bundle-id")
        appStoreEnvironment = try settings.string("study.appstore-environment")
        guard ["Production", "Sandbox"].contains(appStoreEnvironment) else {
            throw StartupError("study.appstore-environment must be Production or Sandbox")
        }
        dodgePenaltySeconds = try settings.int("study.dodge-penalty-seconds")
        guard (1...86_400).contains(dodgePenaltySeconds) else { throw StartupError("study.dodge-penalty-seconds must be 1–86400") }
        recommendedStudies = try settings.string("study.recommended-studies").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        guard recommendedStudies.allSatisfy({ StudyQueueFields.isStudyName($0) }) else {
            throw StartupError("study.recommended-studies: each study is 1–\(StudyQueueFields.maxStudyNameCharacters) characters")
        }
    }
}
