@testable import AuthApp
import SuiteTesting
import Testing

@Suite("Password hashing (bcrypt via libxcrypt)")
struct PasswordHasherTests {
    @Test func hashesAreBcryptAtTheConfiguredCostAndSalted() async throws {
        let hasher = PasswordHasher(cost: 10)
        let first = try await hasher.hash("correct horse 1")
        let second = try await hasher.hash("correct horse 1")
        #expect(first.hasPrefix("$2b$10$") && first.count == 60)
        #expect(first != second, "a fresh salt each time")
        #expect(await hasher.verify("correct horse 1", hash: first))
        #expect(!(await hasher.verify("correct horse 2", hash: first)))
        #expect(!(await hasher.verify("correct horse 1", hash: "not a hash")))
        #expect(!(await hasher.verify("", hash: "")))
    }

    @Test func constantTimeComparison() {
        #expect(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEquals([1, 2], [1, 2, 3]))
    }
}
