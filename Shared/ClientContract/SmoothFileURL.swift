import Foundation

/// Where Smooth's client loads a message's attachment: an absolute URL under the chat server's
/// prefix, `<public URL><chat prefix>/files/<stored name>`, which chat serves without a token
/// (its app loads pictures as plain URLs, as Smooth's S3 URLs were). History (chat) and STOMP
/// frames (the gateway) both build it.
public enum SmoothFileURL {
    /// The path under the chat server's prefix where attachments are served.
    public static let route = "/files/"

    /// The URL of the stored attachment `path` (`/static/channelChats/<name>`): `base` (public URL
    /// and chat prefix, no trailing slash) + `/files/` + the stored name, percent-encoded (names
    /// keep a client's non-ASCII letters; a URL must not).
    public static func url(base: String, path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return base + route + (name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name)
    }
}
