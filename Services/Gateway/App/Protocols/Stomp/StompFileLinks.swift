import ClientContract

/// Where STOMP frames point Smooth's app for a message's files (docs/stomp.md): absolute URLs
/// `<public URL><chat prefix>/files/<name>` that chat serves without a token. The public URL is
/// `gateway.public-url`; when that is empty, `http://` + the Host of the client's WebSocket
/// upgrade, as the REST edge does per request. A frame's bytes are therefore shared by every
/// connection with the same base: all of them when the setting is made.
struct StompFileLinks: Sendable {
    /// `gateway.public-url` (empty: each connection's Host).
    var publicURL = ""
    /// `gateway.smooth.chat-prefix`.
    var chatPrefix = "/chat-server"

    /// The base of a connection whose upgrade named `host` (public URL and prefix).
    func base(host: String?) -> String {
        (publicURL.isEmpty ? "http://" + (host ?? "127.0.0.1") : publicURL) + chatPrefix
    }

    /// A stored attachment path as a URL under `base`.
    static func url(base: String, path: String) -> String { SmoothFileURL.url(base: base, path: path) }
}
