import ClientContract
import Hummingbird
import ServiceKit

/// Absolute URLs of attachments in Smooth's answers: `<public URL><chat prefix>/files/<name>`,
/// served without a token by `GET /smooth/chat/files/:file`. The edge forwards both halves (the
/// URL the client reached it by, and its prefixes), so chat needs no setting of its own.
struct SmoothFileLinks: Sendable {
    /// Public URL and prefix, no trailing slash.
    let base: String

    init(base: String) { self.base = base }

    init(_ request: Request) { base = request.smoothPublicURL + request.smoothPrefix(.chat) }

    /// The URL of a stored attachment path (`/static/channelChats/<name>`).
    func url(_ path: String) -> String { SmoothFileURL.url(base: base, path: path) }
}
