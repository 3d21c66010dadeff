@testable import AuthApp
import HTTPTypes
import ServiceKit
import SuiteTesting
import Testing

@Suite("Password hashing (bcrypt via HummingbirdBcrypt)")
struct PasswordHasherTests {
    @Test func hashesAreBcryptAtTheConfiguredCostAndSalted() async throws {
        let hasher = PasswordHasher(cost: 10)
        let first = try await hasher.hash("correct horse 1")
        let second = try await hasher.hash("correct horse 1")
        #expect(first.hasPrefix("$2b$10$") && first.count == 60)
        #expect(first != second, "a fresh salt each time")
        #expect(try await hasher.verify("correct horse 1", hash: first))
        #expect(!(try await hasher.verify("correct horse 2", hash: first)))
        #expect(!(try await hasher.verify("correct horse 1", hash: "not a hash")))
        #expect(!(try await hasher.verify("", hash: "")))
    }

    @Test("past its bound (waiting + running) the hasher sheds at once with E98 and Retry-After; admitted hashes complete")
    func boundedAdmission() async throws {
        let hasher = PasswordHasher(cost: 12, maxPending: 1)
        let hash = try await hasher.hash("correct horse 1")
        let outcomes = await withTaskGroup(of: Result<Bool, APIError>.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    do {
                        return .success(try await hasher.verify("correct horse 1", hash: hash))
                    } catch let error as APIError {
                        return .failure(error)
                    } catch {
                        return .failure(APIError.internalError)
                    }
                }
            }
            var outcomes: [Result<Bool, APIError>] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        let admitted = outcomes.compactMap { try? $0.get() }
        let shed = outcomes.compactMap { if case .failure(let error) = $0 { error } else { nil } }
        #expect(!admitted.isEmpty && admitted.allSatisfy { $0 }, "admitted verifications succeed: \(outcomes)")
        #expect(!shed.isEmpty, "a concurrent verification past the bound is shed: \(outcomes)")
        #expect(shed.allSatisfy { $0.code == "E98" && $0.status == .tooManyRequests && $0.retryAfterSeconds == 1 }, "\(shed)")
        #expect(hasher.admission.current == 0, "every admission is released")
    }

    /// Hashes made by libxcrypt (the suite's hasher before HummingbirdBcrypt, and Python's
    /// `crypt` on Debian 12) verify unchanged: accounts created earlier keep logging in.
    @Test("hashes made by libxcrypt verify: ASCII, Korean, and over bcrypt's 72 bytes")
    func libxcryptHashesStillVerify() async throws {
        let hasher = PasswordHasher(cost: 10)
        let vectors = [
            ("correct horse 1", "$2b$10$4/7HGfs1DuHsDuvRpKdZ/e15HptRC9UQycaK3Jmz3zuF6F3.xqcya"),
            ("새싹이비밀번호-한글", "$2b$10$Lsb/gHCHCtbhEGBMq1s01ene0vr3x2XgIsUxVlvc9O.vvYZYrtbNm"),
            (String(repeating: "x", count: 80), "$2b$10$uisthq5vTzM5pQQ5Jb6XXe8pZ3gD.TBJKx7l5M1McG0Ncs.ZD7TDa"),
        ]
        for (password, hash) in vectors {
            #expect(try await hasher.verify(password, hash: hash), "\(password)")
            #expect(!(try await hasher.verify(password + "!", hash: hash)) || password.utf8.count > 72, "\(password)")
        }
        // What this hasher makes, libxcrypt-compatible in form: $2b$, the cost, 22 + 31 characters.
        let made = try await hasher.hash("새싹이비밀번호-한글")
        #expect(made.hasPrefix("$2b$10$") && made.count == 60)
        #expect(!(try await hasher.verify("correct horse 1", hash: "$2b$10$4/7HGfs1DuHsDuvRpKdZ/e15HptRC9UQycaK3Jmz3zuF6F3.xqcyb")))
    }
}
