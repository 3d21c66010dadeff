/// The suite's version, as `chatsuite --version` prints it; defined here only.
enum ChatSuiteVersion {
    static let current = "0.14.0"
}
