import CCrypt
import Foundation

/// bcrypt (`$2b$`) through libxcrypt. Hashing is deliberately slow CPU work, so it runs on
/// dedicated threads (one per core) behind a bounded admission (`HashingAdmission`): when too
/// many hashes wait, `hash` and `verify` throw E98 instead of queueing without limit.
struct PasswordHasher: Sendable {
    /// bcrypt work factor; ≥ 10 enforced at configuration time.
    let cost: Int
    let admission: HashingAdmission

    init(cost: Int, maxPending: Int = HashingAdmission.defaultCapacity, maxWait: Duration = .seconds(2)) {
        self.cost = cost
        self.admission = HashingAdmission(capacity: maxPending, maxWait: maxWait)
    }

    struct HashingError: Error, CustomStringConvertible {
        let description: String
    }

    /// - Parameter sheddable: false only for the start-up hash (see `HashingAdmission.run`).
    func hash(_ password: String, sheddable: Bool = true) async throws -> String {
        let cost = self.cost
        return try await admission.run(sheddable: sheddable) {
            var random = [UInt8](repeating: 0, count: 16)
            for i in random.indices { random[i] = UInt8.random(in: .min ... .max) }
            var setting = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
            let salt = random.withUnsafeBufferPointer { rnd in
                rnd.withMemoryRebound(to: CChar.self) { crypt_gensalt_rn("$2b$", UInt(cost), $0.baseAddress, Int32($0.count), &setting, Int32(setting.count)) }
            }
            guard salt != nil else { throw HashingError(description: "bcrypt salt generation failed") }
            return try Self.crypt(password, setting: setting)
        }
    }

    /// Constant-time comparison of the recomputed hash; false for a malformed stored hash.
    /// Throws only when the service sheds the request (E98).
    func verify(_ password: String, hash: String) async throws -> Bool {
        guard hash.hasPrefix("$2") else { return false }
        let computed = try await admission.run { try? Self.crypt(password, setting: Array(hash.utf8CString)) }
        guard let computed else { return false }
        return constantTimeEquals(Array(computed.utf8), Array(hash.utf8))
    }

    private static func crypt(_ password: String, setting: [CChar]) throws -> String {
        var data = crypt_data()
        let result = withUnsafeMutableBytes(of: &data) { raw -> String? in
            guard let out = crypt_rn(password, setting, raw.baseAddress, Int32(raw.count)) else { return nil }
            let text = String(cString: out)
            return text.hasPrefix("*") ? nil : text  // "*0"/"*1" are libxcrypt's failure tokens
        }
        guard let result else { throw HashingError(description: "bcrypt failed") }
        return result
    }
}

func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var diff: UInt8 = 0
    for i in a.indices { diff |= a[i] ^ b[i] }
    return diff == 0
}
