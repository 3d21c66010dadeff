import AccessTokens
import ArgumentParser
import Foundation
import ServiceKit

/// The Ed25519 key pair for access tokens, as two PEM files in a folder.
enum JWTKeyFiles {
    static let privateName = "jwt-ed25519.pem"
    static let publicName = "jwt-ed25519.pub.pem"

    /// Creates the pair in `folder` unless it exists; the private key is readable by the owner only.
    static func ensure(in folder: URL) throws -> (privateKey: URL, publicKey: URL) {
        let fm = FileManager.default
        try fm.createDirectory(at: folder, withIntermediateDirectories: true)
        let priv = folder.appendingPathComponent(privateName)
        let pub = folder.appendingPathComponent(publicName)
        if !fm.fileExists(atPath: priv.path) || !fm.fileExists(atPath: pub.path) {
            let pair = try JWTKeyPEM.newEd25519()
            try pair.privateKey.write(to: priv, atomically: true, encoding: .utf8)
            try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: priv.path)
            try pair.publicKey.write(to: pub, atomically: true, encoding: .utf8)
        }
        return (priv, pub)
    }

    /// Writes the public key into `folder` unless the same text is there already.
    static func publish(_ publicKey: URL, to folder: URL) throws -> URL {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let target = folder.appendingPathComponent(publicName)
        let text = try String(contentsOf: publicKey, encoding: .utf8)
        if (try? String(contentsOf: target, encoding: .utf8)) != text {
            try text.write(to: target, atomically: true, encoding: .utf8)
        }
        return target
    }
}

/// `chatsuite jwt-keys --out secrets`: makes the token key pair for a deployment unless it
/// exists (docker-compose's one-shot `keys` service runs it with `--public-out`, so the gateway's
/// volume holds the public key only).
struct JWTKeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "jwt-keys", abstract: "Create the Ed25519 key pair auth signs access tokens with.")

    @Option(help: "Folder to write jwt-ed25519.pem (private, mode 0600) and jwt-ed25519.pub.pem into.")
    var out: String = "secrets"

    @Option(help: "Also copy jwt-ed25519.pub.pem into this folder (kept in step with --out's pair).")
    var publicOut: String?

    func run() async throws {
        let files = try JWTKeyFiles.ensure(in: URL(fileURLWithPath: out, isDirectory: true).standardizedFileURL)
        emit("private key: \(files.privateKey.path)\npublic key:  \(files.publicKey.path)")
        if let publicOut {
            let copy = try JWTKeyFiles.publish(files.publicKey, to: URL(fileURLWithPath: publicOut, isDirectory: true).standardizedFileURL)
            emit("public key:  \(copy.path)")
        }
    }
}
