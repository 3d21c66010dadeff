import Hummingbird

/// A refusal on Smooth's surface with its own code (client contract §2.1, "Error codes"): HTTP 400
/// with `{isSuccess:false, code, message}`.
public struct SmoothError: HTTPResponseError, Sendable, Equatable, CustomStringConvertible {
    public let code: Int
    public let message: String

    public init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    public var status: HTTPResponse.Status { .badRequest }
    public var description: String { "\(code) \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        SmoothEnvelope.failure(code: code, message: message)
    }
}

/// The codes Smooth's client and server know, by surface (the auth and chat servers share the
/// 2xxx range; the community server uses 1xxx and 4xxx).
extension SmoothError {
    // Auth and chat.
    public static let invalidInput = SmoothError(2100, "입력값을 확인해주세요.")
    public static let emptyToken = SmoothError(2101, "JWT를 입력해주세요.")
    public static let invalidToken = SmoothError(2102, "유효하지 않은 JWT입니다.")
    public static let unauthorised = SmoothError(2103, "권한이 없는 유저의 접근입니다.")
    public static let loginRequired = SmoothError(2104, "로그인이 필요합니다.")
    public static let accountNotFound = SmoothError(2111, "존재하지 않는 계정입니다.")
    public static let duplicateEmail = SmoothError(2210, "중복된 이메일입니다.")
    public static let duplicateName = SmoothError(2211, "중복된 닉네임입니다.")
    public static let loginFailed = SmoothError(2213, "로그인에 실패하였습니다.")
    public static let friendNotFound = SmoothError(2170, "존재하지 않는 친구입니다.")
    public static let invalidEmailCode = SmoothError(2180, "유효하지 않은 인증 코드입니다.")
    public static let serverError = SmoothError(2301, "서버 오류입니다.")
    public static let messageNotFound = SmoothError(4111, "존재하지 않는 메시지입니다.")
    // Community.
    public static let badRequest = SmoothError(1400, "잘못된 요청입니다.")
    public static let noPermission = SmoothError(1401, "권한이 없습니다.")
    public static let internalError = SmoothError(1500, "서버 내부 오류입니다.")
    public static let invalidCommunity = SmoothError(4002, "존재하지 않는 커뮤니티입니다.")
    public static let invalidCategory = SmoothError(4003, "존재하지 않는 카테고리입니다.")
    public static let invalidChannel = SmoothError(4004, "존재하지 않는 채널입니다.")
    public static let invalidInvitation = SmoothError(4005, "유효하지 않은 초대장입니다.")
    public static let notMember = SmoothError(4007, "커뮤니티 멤버가 아닙니다.")
    public static let alreadyLocated = SmoothError(4009, "이미 위치한 노드입니다.")
    public static let invalidNextNode = SmoothError(4011, "유효하지 않은 다음 노드입니다.")
    public static let alreadyMember = SmoothError(4013, "이미 초대된 사용자입니다.")
    public static let invalidRoom = SmoothError(4018, "존재하지 않는 방입니다.")
    /// A friends' (two-person) room has no name, icon, invitations or extra members.
    public static let personalRoom = SmoothError(4019, "개인 채팅방은 수정할 수 없습니다.")
    public static let cannotInviteSelf = SmoothError(4020, "스스로를 채팅방에 초대할 수 없습니다.")
    public static let membersRequired = SmoothError(4021, "초대하는 사용자의 수가 부족합니다.")
    /// Too many requests (the suite's limits; Smooth's servers had none): the input code, so
    /// the client shows its generic failure.
    public static let tooManyRequests = SmoothError(1429, "요청이 너무 많습니다. 잠시 후 다시 시도해주세요.")
}
