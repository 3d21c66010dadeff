import Foundation
import LoadGen

/// The drill's table: per fault, what REST answered inside and outside the outage window and
/// how long recovery took; overall, messages accepted / stored / delivered per socket and coins.
enum DrillReport {
    struct Phase: Sendable {
        var fault: String
        var started: ContinuousClock.Instant
        var recovered: ContinuousClock.Instant
        var ok = 0
        var clientErrors = 0
        /// 503 E99 or no connection while the part was down (expected).
        var unavailableInWindow = 0
        /// 503 / no connection outside the window, or any 500: failures.
        var failures = 0
        /// Each failure: when it started (seconds after the fault) and what it was.
        var failureDetails: [String] = []
        var paymentsOK = 0
        var paymentRetries = 0

        var recoverySeconds: Double { (recovered - started).milliseconds / 1000 }

        init(fault: String, started: ContinuousClock.Instant, recovered: ContinuousClock.Instant) {
            self.fault = fault
            self.started = started
            self.recovered = recovered
        }
    }

    struct Totals: Sendable {
        var sends: [DrillOutcome]
        var payments: [DrillOutcome]
        var accepted: [String]
        var stored: Set<String>
        var sockets: [DrillNativeSocket.State]
        var coins: [(expected: Int, actual: Int?)]
        var phases: [Phase]
        /// Unpublished outbox rows per service at the end.
        var outboxBacklog: [String: Int]

        var lost: Int { Set(accepted).subtracting(stored).count }
        var serverErrors: Int { (sends + payments).filter { $0.kind == .serverError }.count }
        var failuresOutsideWindows: Int { DrillReport.attribute(sends, payments, to: phases).reduce(0) { $0 + $1.failures } }
        func missing(_ socket: DrillNativeSocket.State) -> Int { stored.subtracting(socket.live).count }
        var coinsExact: Bool { coins.allSatisfy { $0.actual == $0.expected } }

        var passed: Bool {
            lost == 0 && serverErrors == 0 && failuresOutsideWindows == 0 && coinsExact && outboxBacklog.values.allSatisfy { $0 == 0 }
                && sockets.allSatisfy { $0.duplicates == 0 && (missing($0) == 0 || $0.needsRefetch) }
        }
    }

    /// Assigns each outcome to the phase it started in (from its fault to the next fault):
    /// inside the outage window (fault … recovery) an unavailable answer is expected, outside it
    /// is a failure; a 500 is a failure anywhere.
    static func attribute(_ sends: [DrillOutcome], _ payments: [DrillOutcome], to phases: [Phase]) -> [Phase] {
        var phases = phases
        for i in phases.indices {
            phases[i].ok = 0; phases[i].clientErrors = 0; phases[i].unavailableInWindow = 0; phases[i].failures = 0
            phases[i].paymentsOK = 0; phases[i].paymentRetries = 0; phases[i].failureDetails = []
        }
        func phaseIndex(_ at: ContinuousClock.Instant) -> Int? {
            phases.indices.last { phases[$0].started <= at }
        }
        for (outcome, isPayment) in sends.map({ ($0, false) }) + payments.map({ ($0, true) }) {
            guard let i = phaseIndex(outcome.startedAt) else {
                // Before the first fault: steady state, every unavailable answer is a failure.
                continue
            }
            // A request that began just before the fault can meet it too.
            let inWindow = outcome.startedAt <= phases[i].recovered
            switch outcome.kind {
            case .ok:
                if isPayment { phases[i].paymentsOK += 1 } else { phases[i].ok += 1 }
            case .clientError:
                if isPayment { phases[i].paymentRetries += 1 } else { phases[i].clientErrors += 1 }
            case .unavailable, .unreachable:
                if isPayment { phases[i].paymentRetries += 1 }
                if inWindow { phases[i].unavailableInWindow += 1 } else { phases[i].failures += 1 }
            case .serverError:
                phases[i].failures += 1
            }
            if outcome.kind == .serverError || (!inWindow && [.unavailable, .unreachable].contains(outcome.kind)) {
                let offset = (outcome.startedAt - phases[i].started).milliseconds / 1000
                phases[i].failureDetails.append(
                    String(
                        format: "%@ started %.2f s after the fault (recovered at %.2f s): %@ %@", isPayment ? "payment" : "send", offset,
                        phases[i].recoverySeconds, "\(outcome.kind)", outcome.code ?? "no code"
                    ))
            }
        }
        return phases
    }

    static func markdown(_ phases: [Phase], totals: Totals, command: String) -> String {
        var out = "### Fault drill (`\(command)`)\n\n"
        out +=
            "| fault | recovery | REST 200 | clean E-codes | 503/refused in window | failures (5xx outside window, any 500) | payments 200 | payment retries |\n"
        out += "|---|---|---|---|---|---|---|---|\n"
        for p in phases {
            out += String(
                format: "| %@ | %.1f s | %d | %d | %d | %d | %d | %d |\n", p.fault, p.recoverySeconds, p.ok, p.clientErrors,
                p.unavailableInWindow, p.failures, p.paymentsOK, p.paymentRetries)
        }
        for p in phases where !p.failureDetails.isEmpty {
            out += "\nFailures during \(p.fault): " + p.failureDetails.joined(separator: "; ") + "\n"
        }
        let steady = totals.sends.filter { outcome in !totals.phases.contains { $0.started <= outcome.startedAt } }
        out += "\nBefore the first fault: \(steady.filter { $0.kind == .ok }.count) of \(steady.count) sends answered 200.\n\n"
        out += "Messages: \(totals.sends.count) sent, \(totals.accepted.count) accepted (200), \(totals.stored.count) stored, **\(totals.lost) lost** "
        out += "(accepted but not stored); 500s anywhere: \(totals.serverErrors).\n\n"
        out +=
            "| native socket | delivered live | missing live | duplicates | sequence gaps | resumes | not resumable → identified anew (the app fetches history over REST) |\n|---|---|---|---|---|---|---|\n"
        for (i, s) in totals.sockets.enumerated() {
            let delivered = totals.stored.intersection(s.live).count
            out += "| \(i) | \(delivered) | \(totals.missing(s)) | \(s.duplicates) | \(s.gaps) | \(s.resumes) | \(s.reidentified) |\n"
        }
        let expected = totals.coins.reduce(0) { $0 + $1.expected }
        let actual = totals.coins.reduce(0) { $0 + ($1.actual ?? 0) }
        out +=
            "\nUnpublished outbox rows at the end: " + totals.outboxBacklog.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            + ".\n"
        out +=
            "\nCoins: \(expected) expected from settled purchases, \(actual) credited (\(totals.coinsExact ? "exactly once" : "MISMATCH: \(totals.coins)")).\n\n"
        out += "Result: **\(totals.passed ? "passed" : "FAILED")**\n"
        return out
    }
}
