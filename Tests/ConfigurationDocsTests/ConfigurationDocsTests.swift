import AuthApp
import ChatApp
import ChatFanoutApp
import Configuration
import Foundation
import GatewayApp
import PaymentApp
import PresenceApp
import PushApp
import ServiceCatalog
import ServiceKit
import StudyApp
import Testing
import WorkspaceApp

/// docs/configuration.md against the code: every key with a default is documented with that
/// default, every documented key is one the code reads, each row's environment variable is the
/// key's, and every `chatsuite` command is described.
@Suite("docs/configuration.md matches the code")
struct ConfigurationDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// One row of a key table: its keys, environment variables and default cell.
    struct Row {
        let keys: [String]
        let variables: [String]
        let defaultCell: String
    }

    static func rows() throws -> [Row] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var rows: [Row] = []
        var header: [String] = []
        for line in text.split(separator: "\n") where line.hasPrefix("|") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast().map { $0.trimmingCharacters(in: .whitespaces) }
            if cells.first == "config key" {
                header = cells
                continue
            }
            guard let keyColumn = header.firstIndex(of: "config key"), let defaultColumn = header.firstIndex(of: "default"),
                let variableColumn = header.firstIndex(of: "environment variable"), cells.count == header.count
            else { continue }
            rows.append(Row(keys: code(in: cells[keyColumn]), variables: code(in: cells[variableColumn]), defaultCell: cells[defaultColumn]))
        }
        return rows
    }

    /// The `…` spans of a cell.
    static func code(in cell: String) -> [String] {
        cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// Every executable's defaults: the platform's, then each service's own.
    static var defaults: [(owner: String, key: String, value: ConfigValue)] {
        let services: [(String, [AbsoluteConfigKey: ConfigValue])] = [
            ("gateway", GatewayService.defaults), ("auth", AuthService.defaults), ("workspace", WorkspaceService.defaults), ("chat", ChatService.defaults),
            ("chat-fanout", ChatFanoutService.defaults), ("presence", PresenceService.defaults), ("payment", PaymentService.defaults),
            ("push", PushService.defaults), ("study", StudyService.defaults),
        ]
        var all = ServiceSettings.platformDefaults.map { ("platform", $0.key.description, $0.value) }
        for (owner, values) in services { all += values.map { (owner, $0.key.description, $0.value) } }
        // The ports and the gateway's upstream URLs come from the catalog (its own table and test).
        let catalogKeys = Set(ServiceEntry.all.map(\.urlSetting) + ["http.port"])
        return all.filter { !catalogKeys.contains($0.1) }
    }

    static func rendered(_ value: ConfigValue) -> [String] {
        switch value.content {
        case .string(let text): [text]
        case .int(let number): [String(number)]
        case .double(let number): [number == number.rounded() ? String(Int(number)) : String(number)]
        case .bool(let flag): [String(flag)]
        case .stringArray(let texts): texts
        case .intArray(let numbers): numbers.map(String.init)
        default: ["\(value.content)"]
        }
    }

    @Test("every key with a default is documented, with that default")
    func defaultsAreDocumented() throws {
        let rows = try Self.rows()
        for (owner, key, value) in Self.defaults {
            let row = rows.first { $0.keys.contains(key) }
            guard let row else {
                Issue.record("\(owner)'s key \(key) is not in docs/configuration.md")
                continue
            }
            for text in Self.rendered(value) {
                if text.isEmpty {
                    #expect(
                        row.defaultCell.contains("empty") || row.defaultCell.contains("none"), "\(key): empty by default, documented as '\(row.defaultCell)'")
                    continue
                }
                #expect(row.defaultCell.contains(text), "\(key): the code's default \(text) is not in the documented '\(row.defaultCell)'")
            }
        }
    }

    @Test("every documented key is read by the code, under its environment variable")
    func documentedKeysExist() throws {
        let sources = try Self.sourceText()
        // The upstream URLs are the catalog's (`ServiceEntry.urlSetting`).
        let defaulted = Set(Self.defaults.map(\.key) + ServiceEntry.all.map(\.urlSetting))
        for row in try Self.rows() {
            for key in row.keys where key.contains(".") {
                let base = key.hasSuffix("-file") ? String(key.dropLast(5)) : key
                let known = [key, base].contains { defaulted.contains($0) || sources.contains("\"\($0)\"") }
                #expect(known, "\(key) is documented but the code never reads it")
                let variable = key.uppercased().replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "_")
                #expect(row.variables.contains(variable), "\(key): its environment variable \(variable) is not in its row (\(row.variables))")
            }
        }
    }

    @Test("every chatsuite command is described")
    func commandsAreDescribed() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let binary = URL(fileURLWithPath: ProcessInfo.processInfo.environment["CHATSUITE_BIN_DIR"] ?? Self.root.appendingPathComponent(".build/debug").path)
            .appendingPathComponent("chatsuite")
        func subcommands(_ arguments: [String]) throws -> [String] {
            let help = try Self.output(of: binary, arguments + ["--help"])
            guard let section = help.components(separatedBy: "SUBCOMMANDS:").dropFirst().first else { return [] }
            return section.split(separator: "\n").compactMap { line in
                // "  name   Description": a command line starts with exactly two spaces.
                guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
                guard let name = line.split(separator: " ").first, name.allSatisfy({ $0.isLowercase || $0 == "-" }) else { return nil }
                return String(name)
            }
        }
        let top = try subcommands([])
        #expect(top.contains("dev"))
        var commands: [String] = []
        for command in top {
            let nested = try subcommands([command]).filter { $0 != "help" }
            commands += nested.isEmpty ? ["chatsuite \(command)"] : nested.map { "chatsuite \(command) \($0)" }
        }
        let missing = commands.filter { !text.contains($0) }
        #expect(missing.isEmpty, "not described in docs/configuration.md: \(missing)")
    }

    static func sourceText() throws -> String {
        var text = ""
        for folder in ["Services", "Shared"] {
            let enumerator = FileManager.default.enumerator(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil)
            while let url = enumerator?.nextObject() as? URL {
                if url.pathExtension == "swift" { text += try String(contentsOf: url, encoding: .utf8) }
            }
        }
        return text
    }

    static func output(of executable: URL, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("chatsuite-help-\(UUID().uuidString)")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: file) }
        process.standardOutput = try FileHandle(forWritingTo: file)
        try process.run()
        process.waitUntilExit()
        return try String(contentsOf: file, encoding: .utf8)
    }
}
