import Foundation
import ServiceCatalog
import Testing

/// The catalog is the one list of services; the files that cannot read it (Package.swift's
/// folders, docker-compose.yml, the PostgreSQL init script, the configuration docs) must agree
/// with it, and this fails when one of them does not.
@Suite("The service catalog and the files that restate it")
struct CatalogConsistencyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `chat-fanout` → `ChatFanout`: the folder Package.swift derives the executable name from.
    static func folder(of entry: ServiceEntry) -> String {
        entry.name.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    @Test("every catalog entry has its Services/<Name>/{App,Server} folder and its line in Package.swift, and every service folder an entry")
    func folders() throws {
        let services = Self.root.appendingPathComponent("Services")
        let withApp = try FileManager.default.contentsOfDirectory(atPath: services.path)
            .filter { FileManager.default.fileExists(atPath: services.appendingPathComponent("\($0)/App").path) }
        #expect(Set(withApp) == Set(ServiceEntry.all.map(Self.folder)))
        for entry in ServiceEntry.all {
            #expect(FileManager.default.fileExists(atPath: services.appendingPathComponent("\(Self.folder(of: entry))/Server/main.swift").path), "\(entry)")
        }
        // Package.swift's `serviceFolders`: its keys are the lines `    "<Folder>": [` inside it.
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let list = try #require(manifest.components(separatedBy: "let serviceFolders: [String: [Target.Dependency]] = [").dropFirst().first)
        let body = try #require(list.components(separatedBy: "\n]\n").first)
        let listed = body.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("    \""), let end = line.dropFirst(5).firstIndex(of: "\"") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 5)..<end])
        }
        #expect(Set(listed) == Set(ServiceEntry.all.map(Self.folder)), "Package.swift's serviceFolders")
    }

    @Test("names, ports and database names are unique")
    func unique() {
        let all = ServiceEntry.all
        #expect(Set(all.map(\.name)).count == all.count)
        #expect(Set(all.map(\.port)).count == all.count)
        let databases = all.compactMap { $0.database?.name }
        #expect(Set(databases).count == databases.count)
        #expect(all.filter(\.isEdge) == [.gateway])
        #expect(all.filter { $0.tokenKey == .signing } == [.auth])
    }

    @Test("docker-compose.yml runs every catalog service with what its entry says it needs")
    func compose() throws {
        let compose = try Self.composeFile()
        let chatsuite = compose.services.filter { $0.value.build?.args?["SERVICE"] != nil }
        #expect(Set(chatsuite.keys) == Set(ServiceEntry.all.map(\.name)), "compose services that build a chatsuite executable")
        for entry in ServiceEntry.all {
            let service = try #require(chatsuite[entry.name], "compose has no service \(entry)")
            let env = service.environment ?? [:]
            #expect(service.build?.args?["SERVICE"] == entry.name)
            if let database = entry.database {
                let url = try #require(env["DATABASE_URL"], "\(entry) has no DATABASE_URL")
                #expect(url.hasPrefix("postgres://\(database.name):"), "\(entry): \(url)")
                #expect(url.hasSuffix("@postgres:5432/\(database.name)"), "\(entry): \(url)")
                #expect(service.dependsOn.contains("postgres"), "\(entry) must wait for postgres")
            } else {
                #expect(env["DATABASE_URL"] == nil, "\(entry) has no database in the catalog")
            }
            let filesVariable = ServiceEntry.environmentVariable(entry.filesDirectorySetting)
            #expect((env[filesVariable] != nil) == entry.storesFiles, "\(entry): \(filesVariable)")
            if let directory = env[filesVariable] {
                #expect(service.volumes.contains { $0.hasSuffix(":\(directory)") }, "\(entry): a volume at \(directory)")
            }
            #expect((env["JWT_PRIVATE_KEY_FILE"] != nil) == (entry.tokenKey == .signing), "\(entry): JWT_PRIVATE_KEY_FILE")
            #expect((env["JWT_PUBLIC_KEY_FILE"] != nil) == (entry.tokenKey == .verifying), "\(entry): JWT_PUBLIC_KEY_FILE")
            #expect((env["SESAC_KEYS"] != nil) == entry.isEdge, "\(entry): SESAC_KEYS")
            #expect(service.dependsOn.contains("kafka"), "\(entry) must wait for kafka")
        }
        // The edge forwards to exactly the routed services, at their compose names.
        let gateway = try #require(chatsuite[ServiceEntry.gateway.name])
        let urls = (gateway.environment ?? [:]).filter { $0.key.hasSuffix("_URL") }
        let expected = Dictionary(
            uniqueKeysWithValues: ServiceEntry.upstreams.map {
                (ServiceEntry.environmentVariable($0.urlSetting), "http://\($0.name):8080")
            })
        #expect(urls == expected)
        for upstream in ServiceEntry.upstreams {
            #expect(gateway.dependsOn.contains(upstream.name), "the gateway must start after \(upstream)")
        }
    }

    @Test("the PostgreSQL init script creates exactly the catalog's databases and extensions")
    func initScript() throws {
        let script = try String(contentsOf: Self.root.appendingPathComponent("deploy/postgres/init-databases.sh"), encoding: .utf8)
        func array(_ name: String) throws -> [String] {
            let line = try #require(script.split(separator: "\n").first { $0.hasPrefix("\(name)=(") }, "no \(name)=(…) in the script")
            return line.dropFirst(name.count + 2).prefix { $0 != ")" }.split(separator: " ").map(String.init)
        }
        #expect(try array("SERVICES") == ServiceEntry.all.compactMap { $0.database?.name })
        let extensions = Set(ServiceEntry.all.flatMap { $0.database?.extensions ?? [] })
        #expect(extensions.isSubset(of: ["pg_trgm"]), "the script creates pg_trgm only: teach it \(extensions)")
        #expect(
            try array("TRGM_DATABASES")
                == ServiceEntry.all.compactMap { entry in
                    entry.database.flatMap { $0.extensions.contains("pg_trgm") ? $0.name : nil }
                })
    }

    @Test("docs/configuration.md lists every service with the catalog's port and databases")
    func configurationDocs() throws {
        let docs = try String(contentsOf: Self.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let rows = docs.split(separator: "\n").filter { $0.hasPrefix("| `") && $0.contains("` | 80") }
        var documented: [String: [String]] = [:]
        for row in rows {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            documented[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = Array(cells.dropFirst())
        }
        #expect(Set(documented.keys) == Set(ServiceEntry.all.map(\.name)))
        for entry in ServiceEntry.all {
            let cells = try #require(documented[entry.name], "\(entry) is not in the per-service table")
            #expect(cells[0] == String(entry.port), "\(entry)")
            if let database = entry.database {
                #expect(cells[1] == "required" && cells[2] == "`\(database.devName)`" && cells[3].hasPrefix("`\(database.name)`"), "\(entry): \(cells)")
            } else {
                #expect(cells[1...3].allSatisfy { $0 == "none" }, "\(entry): \(cells)")
            }
        }
    }

    // MARK: compose, read through python3-yaml (a YAML parser, not a guess at the format)

    struct Compose: Decodable {
        let services: [String: Service]
    }

    struct Service: Decodable {
        struct Build: Decodable { let args: [String: String]? }
        let build: Build?
        let environment: [String: String]?
        let volumes: [String]
        let dependsOn: Set<String>

        enum CodingKeys: String, CodingKey { case build, environment, volumes, dependsOn = "depends_on" }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            build = try c.decodeIfPresent(Build.self, forKey: .build)
            environment = try c.decodeIfPresent([String: String].self, forKey: .environment)
            volumes = try c.decodeIfPresent([String].self, forKey: .volumes) ?? []
            // `depends_on` is a list or a map of conditions.
            if let list = try? c.decodeIfPresent([String].self, forKey: .dependsOn) {
                dependsOn = Set(list)
            } else {
                struct Condition: Decodable {}
                dependsOn = Set((try c.decodeIfPresent([String: Condition].self, forKey: .dependsOn) ?? [:]).keys)
            }
        }
    }

    static func composeFile() throws -> Compose {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            "-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", root.appendingPathComponent("docker-compose.yml").path,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "python3 with python3-yaml (scripts/setup-debian.sh installs it) could not read docker-compose.yml")
        return try JSONDecoder().decode(Compose.self, from: data)
    }
}
