import Foundation
import HummingbirdBcrypt

/// bcrypt (`$2b$`, OpenBSD's implementation through HummingbirdBcrypt: no system library, so the
/// suite builds on macOS too; hashes made earlier by libxcrypt verify unchanged, see
/// `PasswordHasherTests`). Hashing is deliberately slow CPU work, so it runs on dedicated threads
/// (one per core) behind a bounded admission (`HashingAdmission`): when too many hashes wait,
/// `hash` and `verify` throw E98 instead of queueing without limit.
struct PasswordHasher: Sendable {
    /// bcrypt work factor; ≥ 10 enforced at configuration time (and at most 31, bcrypt's own bound).
    let cost: Int
    let admission: HashingAdmission

    init(cost: Int, maxPending: Int = HashingAdmission.defaultCapacity, maxWait: Duration = .seconds(2)) {
        self.cost = cost
        self.admission = HashingAdmission(capacity: maxPending, maxWait: maxWait)
    }

    /// - Parameter sheddable: false only for the start-up hash (see `HashingAdmission.run`).
    func hash(_ password: String, sheddable: Bool = true) async throws -> String {
        let cost = UInt8(clamping: min(max(self.cost, 10), 31))
        return try await admission.run(sheddable: sheddable) { Bcrypt.hash(password, cost: cost) }
    }

    /// True when `password` matches the stored hash; false for a malformed stored hash.
    /// Throws only when the service sheds the request (E98).
    func verify(_ password: String, hash: String) async throws -> Bool {
        // Only bcrypt hashes ($2a$/$2b$/$2y$ with a two-digit cost): anything else never matches.
        guard hash.utf8.count == 60, hash.hasPrefix("$2") else { return false }
        return try await admission.run { Bcrypt.verify(password, hash: hash) }
    }
}
