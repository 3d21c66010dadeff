/// The API document's path templates (`/v1/workspaces/{workspace_id}/channels`), matched
/// against request paths: the bounded `http_route` label of the gateway's request metrics, one
/// per documented path instead of the proxy's catch-all `/v1/**`.
///
/// Of the templates matching a path, the one with the most literal segments wins
/// (`/v1/friends/me` over `/v1/friends/{id}`). A path no template matches is labelled
/// `unmatched` (client mistakes and probes cannot grow the label set).
struct PathTemplates: Sendable {
    private let templates: [(template: String, segments: [Substring?])]

    init(_ templates: [String]) {
        self.templates = templates.map { template in
            (template, template.split(separator: "/").map { $0.hasPrefix("{") && $0.hasSuffix("}") ? nil : $0 })
        }
    }

    /// The top-level keys of the document's `paths:` section (its two-space-indented `/…:`
    /// lines; the document is the suite's own and `APIDocumentTests` keep it valid).
    init(openAPIYAML text: Substring) {
        var paths: [String] = []
        var inPaths = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty {
                inPaths = line.hasPrefix("paths:")
                continue
            }
            guard inPaths, line.hasPrefix("  "), line.hasSuffix(":") else { continue }
            var path = line.dropFirst(2).dropLast()
            if let quote = path.first, quote == "'" || quote == "\"", path.count >= 2, path.last == quote { path = path.dropFirst().dropLast() }
            if path.hasPrefix("/") { paths.append(String(path)) }
        }
        self.init(paths)
    }

    var count: Int { templates.count }

    func label(for path: String) -> String {
        let parts = path.split(separator: "/")
        var best: (template: String, literals: Int)?
        for (template, segments) in templates where segments.count == parts.count {
            var literals = 0
            var matches = true
            for (segment, part) in zip(segments, parts) {
                if let segment {
                    guard segment == part else {
                        matches = false
                        break
                    }
                    literals += 1
                }
            }
            if matches, literals > (best?.literals ?? -1) { best = (template, literals) }
        }
        return best?.template ?? "unmatched"
    }
}
