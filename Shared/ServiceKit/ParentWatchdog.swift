import Foundation
import ServiceLifecycle

/// Exits the process (gracefully, via SIGTERM to itself, forced after 10 s) when the launcher
/// that started it is gone, so a crashed or killed `chatsuite dev` never leaves services behind.
struct ParentWatchdog: Service {
    func run() async throws {
        guard let value = ProcessInfo.processInfo.environment["CHATSUITE_PARENT_PID"], let parent = Int32(value) else {
            try? await gracefulShutdown()
            return
        }
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                if getppid() != parent {
                    // The launcher is gone, and so is the reader of our log pipe: a full pipe
                    // would block every log call (and with it shutdown). Log to /dev/null, shut
                    // down gracefully, and exit regardless after a grace period.
                    let devNull = open("/dev/null", O_WRONLY)
                    if devNull >= 0 {
                        dup2(devNull, STDOUT_FILENO)
                        dup2(devNull, STDERR_FILENO)
                    }
                    Thread.detachNewThread {
                        sleep(10)
                        _exit(1)
                    }
                    kill(getpid(), SIGTERM)
                    return
                }
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }
}
