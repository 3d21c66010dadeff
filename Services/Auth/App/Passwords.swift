import CCrypt
import Dispatch
import Foundation

/// bcrypt (`$2b$`) through libxcrypt. Hashing is deliberately slow CPU work, so it runs on a
/// dedicated concurrent queue limited to the core count, never on the cooperative pool.
struct PasswordHasher: Sendable {
    /// bcrypt work factor; ≥ 10 enforced at configuration time.
    let cost: Int

    private static let queue = DispatchQueue(label: "chatsuite.bcrypt", qos: .userInitiated, attributes: .concurrent)
    private static let slots = DispatchSemaphore(value: max(1, ProcessInfo.processInfo.activeProcessorCount))

    struct HashingError: Error, CustomStringConvertible {
        let description: String
    }

    func hash(_ password: String) async throws -> String {
        let cost = self.cost
        return try await Self.offload {
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
    func verify(_ password: String, hash: String) async -> Bool {
        guard hash.hasPrefix("$2") else { return false }
        let computed = try? await Self.offload { try Self.crypt(password, setting: Array(hash.utf8CString)) }
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

    private static func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                slots.wait()
                defer { slots.signal() }
                continuation.resume(with: Result { try work() })
            }
        }
    }
}

func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var diff: UInt8 = 0
    for i in a.indices { diff |= a[i] ^ b[i] }
    return diff == 0
}
