import Foundation
import ServiceCatalog
import Testing
import Yams

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
        let chatsuite = compose.services.filter { $0.value.build?.target != nil && $0.key != Self.keysService }
        #expect(Set(chatsuite.keys) == Set(ServiceEntry.all.map(\.name)), "compose services that build a chatsuite executable")
        for entry in ServiceEntry.all {
            let service = try #require(chatsuite[entry.name], "compose has no service \(entry)")
            let env = service.environment ?? [:]
            #expect(service.build?.target == entry.name, "\(entry): the Dockerfile target of its executable")
            #expect(
                !service.volumes.contains { $0.hasPrefix(".") || $0.hasPrefix("/") }, "\(entry): no bind mounts (a missing file becomes a root-owned directory)"
            )
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
            if let keyFile = env["JWT_PRIVATE_KEY_FILE"] ?? env["JWT_PUBLIC_KEY_FILE"] {
                // The key comes from the one-shot keys service's volume, and only once it is there.
                #expect(service.dependsOnConditions[Self.keysService] == "service_completed_successfully", "\(entry) must wait for the keys service")
                let folder = (keyFile as NSString).deletingLastPathComponent
                #expect(service.volumes.contains { $0.contains(":\(folder)") }, "\(entry): a volume at \(folder)")
            }
            #expect((env["SESAC_KEYS"] != nil) == entry.isEdge, "\(entry): SESAC_KEYS")
            #expect(service.dependsOn.contains("kafka"), "\(entry) must wait for kafka")
        }
        // The edge forwards to exactly the routed services, at their compose names.
        let gateway = try #require(chatsuite[ServiceEntry.gateway.name])
        // Service URLs (`<NAME>_URL` of any catalog name; `STUDY_FIREBASE_JWKS_URL` is not one).
        let serviceURLs = Set(ServiceEntry.all.map { ServiceEntry.environmentVariable($0.urlSetting) })
        let urls = (gateway.environment ?? [:]).filter { serviceURLs.contains($0.key) }
        let expected = Dictionary(
            uniqueKeysWithValues: ServiceEntry.upstreams.map {
                (ServiceEntry.environmentVariable($0.urlSetting), "http://\($0.name):8080")
            })
        #expect(urls == expected)
        for upstream in ServiceEntry.upstreams {
            #expect(gateway.dependsOn.contains(upstream.name), "the gateway must start after \(upstream)")
        }
    }

    static let keysService = "keys"

    @Test("the keys service makes the JWT pair into the volumes auth and the gateway read, with the CLI's image")
    func keysService() throws {
        let compose = try Self.composeFile()
        let keys = try #require(compose.services[Self.keysService], "compose has no one-shot keys service")
        #expect(keys.build?.target == "chatsuite")
        #expect(keys.command.first == "jwt-keys", "\(keys.command)")
        let folders = keys.command.enumerated().compactMap { index, word in
            word.hasPrefix("--") && word.hasSuffix("out") ? keys.command.dropFirst(index + 1).first : nil
        }
        for folder in folders {
            let volume = try #require(keys.volumes.first { $0.hasSuffix(":\(folder)") }, "the keys service writes \(folder) into no volume")
            let name = String(volume.prefix { $0 != ":" })
            #expect(compose.volumes.keys.contains(name), "\(name) is a named volume")
        }
        #expect(Set(folders).count == 2, "private and public folders: \(keys.command)")
        // Replicas must not share a gateway id: nothing may give them one.
        let gateway = try #require(compose.services[ServiceEntry.gateway.name])
        #expect(gateway.environment?["GATEWAY_ID"] == nil && gateway.environment?["INSTANCE_ID"] == nil)
        #expect(gateway.hostname == nil && gateway.containerName == nil)
    }

    @Test("every secret in docker-compose.yml must be given (${VAR:?} or ${VAR?}), never defaulted")
    func secretsHaveNoDefaults() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docker-compose.yml"), encoding: .utf8)
        let secretWords = ["PASSWORD", "SECRET", "SESAC_KEYS", "API_KEY", "PRIVATE"]
        var secrets: [String] = []
        for match in text.matches(of: /\$\{([A-Z0-9_]+)([^}]*)\}/) {
            let name = String(match.1)
            guard secretWords.contains(where: { name.contains($0) }) else { continue }
            secrets.append(name)
            #expect(match.2.hasPrefix(":?") || match.2.hasPrefix("?"), "\(name) has a default or none: ${\(name)\(match.2)}")
        }
        #expect(Set(secrets).isSuperset(of: ["POSTGRES_PASSWORD", "CHATSUITE_DB_PASSWORD", "SESAC_KEYS", "PAYMENT_PORTONE_API_SECRET"]), "\(secrets)")
        // deploy/env.example supplies each of them (CI runs `docker-compose --env-file deploy/env.example config`).
        let example = try String(contentsOf: Self.root.appendingPathComponent("deploy/env.example"), encoding: .utf8)
        let assigned = Set(example.split(separator: "\n").compactMap { line in line.first == "#" ? nil : line.split(separator: "=").first.map(String.init) })
        #expect(Set(secrets).isSubset(of: assigned), "deploy/env.example lacks \(Set(secrets).subtracting(assigned))")
    }

    @Test("every variable compose gives a chatsuite service is a setting the code reads")
    func composeVariablesExistInCode() throws {
        let compose = try Self.composeFile()
        let known = try Self.settingVariables()
        for (name, service) in compose.services where service.build?.target != nil {
            for variable in (service.environment ?? [:]).keys {
                #expect(known.contains(variable), "\(name): \(variable) is read by no code (a typo, or a setting that was removed)")
            }
        }
        // And docs/configuration.md documents each one.
        let docs = try String(contentsOf: Self.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let variables = Set(compose.services.values.filter { $0.build?.target != nil }.flatMap { ($0.environment ?? [:]).keys })
        for variable in variables.sorted() {
            let documented = docs.contains("`\(variable)`")
            #expect(documented, "docs/configuration.md does not document \(variable)")
        }
    }

    /// The environment variables of every settings key the sources name: string literals shaped
    /// like keys (`gateway.trusted-proxies`), the catalog's derived keys (`chat.url`,
    /// `chat.files-directory`) and the `_FILE` form of secrets read with `secretText`.
    static func settingVariables() throws -> Set<String> {
        var keys: Set<String> = []
        var fileKeys: Set<String> = []
        for folder in ["Shared", "Services"] {
            let base = root.appendingPathComponent(folder)
            guard let files = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                let source = try String(contentsOf: file, encoding: .utf8)
                for match in source.matches(of: /"([a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+)"/) { keys.insert(String(match.1)) }
                for match in source.matches(of: /secretText\("([a-z0-9.-]+)"\)/) { fileKeys.insert(String(match.1) + "-file") }
            }
        }
        for entry in ServiceEntry.all { keys.formUnion([entry.urlSetting, entry.filesDirectorySetting]) }
        return Set(keys.union(fileKeys).map(ServiceEntry.environmentVariable))
    }

    @Test("deploy/Dockerfile's builder builds exactly Package.swift's executables, and each has its target")
    func dockerfile() throws {
        let dockerfile = try String(contentsOf: Self.root.appendingPathComponent("deploy/Dockerfile"), encoding: .utf8)
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        // Package.swift: `.executable(name: "chatsuite", …)` plus one per catalog service (the
        // `folders` test ties those to `serviceFolders`).
        let literal = manifest.matches(of: /\.executable\(name: "([a-z-]+)"/).map { String($0.1) }
        let executables = Set(literal + ServiceEntry.all.map(\.name))
        #expect(literal == ["chatsuite"])
        let stages = dockerfile.split(separator: "\n").filter { $0.hasPrefix("FROM ") }.map { $0.split(separator: " ").map(String.init) }
        #expect(stages.filter { $0.last == "build" }.count == 1, "one builder stage")
        let argument = try #require(dockerfile.firstMatch(of: /ARG PRODUCTS="([a-z -]+)"/), "no ARG PRODUCTS=\"…\" in the Dockerfile")
        let products = argument.1.split(separator: " ").map(String.init)
        #expect(Set(products) == executables, "PRODUCTS builds \(products), Package.swift has \(executables.sorted())")
        #expect(products.count == Set(products).count)
        #expect(dockerfile.contains("for product in $PRODUCTS; do") && dockerfile.contains(#"--product "$product""#))
        // One runtime target per product, copying that product's binary and starting it.
        let targets = Set(stages.filter { $0.count == 4 && $0[1] == "runtime" && $0[2] == "AS" }.map { $0[3] })
        #expect(targets == executables)
        for product in executables {
            let stage = try #require(dockerfile.components(separatedBy: "FROM runtime AS \(product)\n").dropFirst().first)
            let body = stage.components(separatedBy: "\nFROM ").first ?? ""
            #expect(body.contains("COPY --from=build /staging/\(product)/ /"), "\(product)")
            #expect(body.contains(#"ENTRYPOINT ["/usr/local/bin/\#(product)"]"#), "\(product)")
        }
        // The gateway serves its OpenAPI document from its resource bundle.
        let gateway = dockerfile.components(separatedBy: "FROM runtime AS gateway\n").dropFirst().first ?? ""
        #expect(gateway.contains("COPY --from=build /staging/resources/ /usr/local/bin/"))
    }

    @Test("the PostgreSQL init script creates exactly the catalog's databases and extensions")
    func initScript() throws {
        let script = try String(contentsOf: Self.root.appendingPathComponent("deploy/postgres/init-databases.sh"), encoding: .utf8)
        func array(_ name: String) throws -> [String] {
            let line = try #require(script.split(separator: "\n").first { $0.hasPrefix("\(name)=(") }, "no \(name)=(…) in the script")
            return line.dropFirst(name.count + 2).prefix { $0 != ")" }.split(separator: " ").map(String.init)
        }
        #expect(try array("SERVICES") == ServiceEntry.all.compactMap { $0.database?.name })
        #expect(
            try array("EXTENSIONS")
                == ServiceEntry.all.flatMap { entry in
                    (entry.database?.extensions ?? []).map { "\(entry.database?.name ?? ""):\($0)" }
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

    // MARK: compose, read with Yams (a YAML parser, not a guess at the format; merge keys resolved)

    struct Compose: Decodable {
        let services: [String: Service]
        let volumes: [String: Volume?]
        struct Volume: Decodable {}
    }

    struct Service: Decodable {
        struct Build: Decodable { let target: String? }
        let build: Build?
        let environment: [String: String]?
        let volumes: [String]
        let command: [String]
        let hostname: String?
        let containerName: String?
        /// `depends_on` service → condition (`service_started` for the list form).
        let dependsOnConditions: [String: String]
        var dependsOn: Set<String> { Set(dependsOnConditions.keys) }

        enum CodingKeys: String, CodingKey {
            case build, environment, volumes, command, hostname, containerName = "container_name", dependsOn = "depends_on"
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            build = try c.decodeIfPresent(Build.self, forKey: .build)
            environment = try c.decodeIfPresent([String: String].self, forKey: .environment)
            volumes = try c.decodeIfPresent([String].self, forKey: .volumes) ?? []
            command = (try? c.decodeIfPresent([String].self, forKey: .command)) ?? []
            hostname = try c.decodeIfPresent(String.self, forKey: .hostname)
            containerName = try c.decodeIfPresent(String.self, forKey: .containerName)
            // `depends_on` is a list or a map of conditions.
            if let list = try? c.decodeIfPresent([String].self, forKey: .dependsOn) {
                dependsOnConditions = Dictionary(uniqueKeysWithValues: list.map { ($0, "service_started") })
            } else {
                struct Condition: Decodable { let condition: String? }
                dependsOnConditions = (try c.decodeIfPresent([String: Condition].self, forKey: .dependsOn) ?? [:]).mapValues {
                    $0.condition ?? "service_started"
                }
            }
        }
    }

    static func composeFile() throws -> Compose {
        let text = try String(contentsOf: root.appendingPathComponent("docker-compose.yml"), encoding: .utf8)
        return try YAMLDecoder().decode(Compose.self, from: text)
    }
}
