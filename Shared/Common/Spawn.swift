#if canImport(Glibc)
    import Glibc
#endif

/// Starts a program with posix_spawn: stdin from /dev/null, stdout and stderr appended to one
/// file (never a pipe: a child that hands its descriptors to a daemon, like `pg_ctl start`, would
/// keep a pipe open forever). The caller reaps the pid with `waitpid`.
public func spawnProcess(path: String, arguments: [String], environment: [String: String], outputPath: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, path, &actions, nil, &argv, &envp)
    guard result == 0 else { throw SpawnError(path: path, errno: result) }
    return pid
}

public struct SpawnError: Error, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "cannot start \(path): \(String(cString: strerror(errno)))" }
}

/// Decodes a `waitpid` status: the exit code, or 128 + signal number for a killed process.
public func exitCode(fromWaitStatus raw: Int32) -> Int32 {
    (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
}
