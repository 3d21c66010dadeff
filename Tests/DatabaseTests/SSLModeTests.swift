import Common
import Database
import Foundation
import PostgresNIO
import TestSupport
import Testing

/// `sslmode` really reaches PostgresNIO: against the test server, `disable` and `prefer` connect
/// whatever it offers, and `require` connects exactly when the server has TLS on.
@Suite("PostgreSQL sslmode against a real server")
struct SSLModeTests {
    /// Whether one query succeeds within a few seconds (a refused TLS handshake makes the pool
    /// retry, so failure shows as a timeout or an error).
    static func connects(_ configuration: DatabaseConfiguration) async -> Bool {
        do {
            return try await withTimeout(.seconds(5), "query with sslmode \(configuration.sslMode?.rawValue ?? "none")") {
                try await TestDatabase.withRunningClient(configuration.makeClient(logger: TestDatabase.logger)) { client in
                    let rows = try await client.query("SELECT 1", logger: TestDatabase.logger)
                    for try await _ in rows {}
                    return true
                }
            }
        } catch {
            return false
        }
    }

    @Test("disable and prefer connect; require connects iff the server has ssl on")
    func modes() async throws {
        var server = try TestDatabase.serverConfiguration
        guard server.unixSocketDirectory == nil else { return }  // TLS is for TCP only
        server.sslMode = .disable
        let sslOn = try await TestDatabase.withRunningClient(server.makeClient(logger: TestDatabase.logger)) { client in
            var on = false
            for try await value in try await client.query("SHOW ssl", logger: TestDatabase.logger).decode(String.self) { on = value == "on" }
            return on
        }
        #expect(await Self.connects(server))
        server.sslMode = .prefer
        #expect(await Self.connects(server))
        server.sslMode = .require
        #expect(await Self.connects(server) == sslOn, "the server has ssl \(sslOn ? "on" : "off")")
    }

    @Test("sslmode and sslrootcert survive the URL handed to child processes")
    func urlRoundTrip() throws {
        let parsed = try DatabaseConfiguration(url: "postgres://u:p@db:5432/app?sslmode=verify-ca&sslrootcert=/etc/ca.pem")
        #expect(parsed.sslMode == .verifyCA && parsed.sslRootCertificate == "/etc/ca.pem")
        let again = try DatabaseConfiguration(url: parsed.url)
        #expect(again.sslMode == .verifyCA && again.sslRootCertificate == "/etc/ca.pem" && again.password == "p")
        #expect(throws: DatabaseConfiguration.ParseError.unsupportedSSLMode("bogus")) { try DatabaseConfiguration(url: "postgres://u@db/app?sslmode=bogus") }
    }
}
