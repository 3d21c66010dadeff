/// What a file is, by its name's extension, as Smooth's `fileType` names it (client contract
/// §2.1, §2.2): `image`, `video` or `file`. History and STOMP frames both use it.
public enum AttachmentKind {
    public static func of(path: String) -> String {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "file" }
        switch name[name.index(after: dot)...].lowercased() {
        case "jpg", "jpeg", "png", "gif", "webp", "heic", "bmp": return "image"
        case "mp4", "mov", "m4v", "webm": return "video"
        default: return "file"
        }
    }
}
