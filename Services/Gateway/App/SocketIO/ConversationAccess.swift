import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Asks chat whether a user may read a conversation (`GET /internal/v1/conversations/{c}/readers/{u}`
/// → 204 yes, 404 no). Used when a Socket.IO client presents credentials; anything but a clear
/// yes (an error, a timeout) refuses the join.
struct ConversationAccess: Sendable {
    let client: HTTPClient
    let chatURL: String
    let logger: Logger

    func mayRead(user: String, conversation: UUID) async -> Bool {
        guard let userId = UUID(uuidString: user) else { return false }
        let url = "\(chatURL)/internal/v1/conversations/\(conversation.uuidString.lowercased())/readers/\(userId.uuidString.lowercased())"
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(3))
            _ = try? await response.body.collect(upTo: 1024)
            switch response.status.code {
            case 204: return true
            case 404: return false
            default:
                logger.warning("chat reader check failed", metadata: ["http.status": "\(response.status.code)"])
                return false
            }
        } catch {
            logger.warning("chat reader check failed", metadata: ["error": "\(error)"])
            return false
        }
    }
}
