import ArgumentParser

@main
struct ChatSuite: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chatsuite",
        abstract: "The chat suite's developer tool: run the whole suite locally, tail events, benchmark, generate real-time load.",
        version: ChatSuiteVersion.current,
        subcommands: [
            DevCommand.self, BrokerCommand.self, PostgresCommand.self, EventsCommand.self, BenchCommand.self, LoadGenCommand.self, DrillCommand.self,
            JWTKeysCommand.self,
        ]
    )
}
