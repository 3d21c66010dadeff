import AsyncHTTPClient
import Configuration
import Database
import FirebaseAuth
import Hummingbird
import Logging
import OutboundHTTP
import ServiceCatalog
import ServiceKit

/// `study`: the study-matching app's server (client contract §3, docs/study-api.md). Its users
/// sign in with Firebase (the `idtoken` header, verified here against Google's key set); the
/// gateway forwards `/v1/user…`, `/v1/queue…` and `/v1/chat/…` to it under `/study` without
/// `SesacKey` or the suite's token.
public enum StudyService {
    public static let name = ServiceEntry.study.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": ConfigValue(.int(ServiceEntry.study.port), isSecret: false),
        AbsoluteConfigKey(ConfigKey(FirebaseProject.projectIdSetting)): "",
        AbsoluteConfigKey(ConfigKey(FirebaseProject.keySetURLSetting)): ConfigValue(.string(FirebaseProject.googleKeySetURL), isSecret: false),
        "study.search-radius-meters": 700,
        "study.dodge-penalty-seconds": 60,
        // Apple Root CA - G3 (PEM) in production; empty: in-app purchases are refused (201).
        "study.appstore-root-certificates-file": "",
        "study.appstore-bundle-id": "com.memolease.sesac1",
        "study.appstore-environment": "Production",
        "study.recommended-studies": "Swift,SwiftUI,알고리즘,코딩테스트,CS",
    ]
    public static let migrations: [Migration] = StudyMigrations.all
}

/// Builds the `study` application: platform services, the Firebase verifier, routes.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let studySettings = try StudySettings(settings)
    var platform = try await ServicePlatform.make(settings: settings, migrations: StudyService.migrations, logger: logger)
    let httpClient = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(3))))
    platform.addService(HTTPClientService(client: httpClient))
    if !studySettings.firebase.isConfigured {
        logger.warning("study.firebase-project-id (STUDY_FIREBASE_PROJECT_ID) is not set: every request is refused with 401")
    }
    let verifier = FirebaseTokenVerifier(
        projectId: studySettings.firebase.projectId, keySetURL: studySettings.firebase.keySetURL, client: httpClient, logger: logger)
    if studySettings.appStoreRootsPEM == nil {
        logger.warning("study.appstore-root-certificates-file (STUDY_APPSTORE_ROOT_CERTIFICATES_FILE) is not set: in-app purchases are refused")
    }
    let appStore = try AppStoreVerifier(
        rootsPEM: studySettings.appStoreRootsPEM, bundleId: studySettings.appStoreBundleId, environment: studySettings.appStoreEnvironment)
    let queueStore = StudyQueueStore(logger: logger)
    let api = StudyAPI(
        postgres: platform.postgres, users: StudyUserStore(logger: logger), verifier: verifier, queueStore: queueStore,
        matching: StudyMatching(store: queueStore, penaltyUnitMilliseconds: Int64(studySettings.dodgePenaltySeconds) * 1000, logger: logger),
        chats: StudyChatStore(logger: logger), appStore: appStore, shop: StudyShopStore(logger: logger), searchRadiusMeters: studySettings.searchRadiusMeters,
        recommendedStudies: studySettings.recommendedStudies,
        logger: logger)
    let router = platform.makeRouter()
    api.add(to: router)
    return platform.makeApplication(responder: router.buildResponder())
}
