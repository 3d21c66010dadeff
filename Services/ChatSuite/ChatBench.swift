import ArgumentParser
import Database
import Events
import Foundation
import LoadGen
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO

/// `chatsuite bench chat`: against a running suite, one user and a workspace with `--channels`
/// channels;
/// 1. bulk-loads `--messages` messages into those channels straight into chat's database (the
///    history at scale: per-channel strictly increasing millisecond times, as the service writes);
/// 2. sends messages through the gateway for `--seconds` (the real insert path: membership check,
///    channel lock, insert, outbox) and reports the rate;
/// 3. reads history through the gateway for `--seconds`: each request asks a random channel for
///    what is newer than the cursor of its 51st-newest message, i.e. 50 messages.
struct ChatBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "chat", abstract: "Message history at scale and message send rate through a running gateway.")

    @OptionGroup var load: GatewayLoadOptions

    @Option(help: "URL of chat's database (to bulk-load the history; secret).")
    var chatDatabaseURL: String

    @Option(help: "Messages to bulk-load.")
    var messages: Int = 10_000_000

    @Option(help: "Channels of the workspace.")
    var channels: Int = 20

    func run() async throws {
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let client = load.client
        let tag = UUID().uuidString.prefix(8).lowercased()
        let token = try await client.joinBenchUser("chat-bench", tag: tag)
        let created = try await client.send(.POST, "/v1/workspaces", token: token, json: #"{"name":"chat-bench-\#(tag)"}"#)
        guard let workspace = client.json(created.body)?["workspace_id"] as? String else {
            throw ValidationError("workspace creation failed with HTTP \(created.status.code)")
        }
        for i in 1..<channels { _ = try await client.send(.POST, "/v1/workspaces/\(workspace)/channels", token: token, json: #"{"name":"bench-\#(i)"}"#) }
        let list = try await client.send(.GET, "/v1/workspaces/\(workspace)/channels", token: token)
        let channelIds = ((try? JSONSerialization.jsonObject(with: Data(list.body.readableBytesView))) as? [[String: Any]] ?? []).compactMap {
            $0["channel_id"] as? String
        }
        guard channelIds.count == channels, let lastChannel = channelIds.last else { throw ValidationError("expected \(channels) channels") }
        // Chat learns the channels from workspace.v1.
        while try await client.send(.GET, "/v1/workspaces/\(workspace)/channels/\(lastChannel)/chats?cursor_date=2100-01-01T00:00:00.000Z", token: token).status
            != .ok
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        let database = try DatabaseConfiguration(url: chatDatabaseURL)
        let postgres = database.makeClient(logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await postgres.run() }
            defer { group.cancelAll() }

            let loadStart = ContinuousClock.now
            try await bulkLoad(postgres, channels: channelIds, sender: try user(of: token), idPrefix: String(tag), logger: logger)
            let loadSeconds = LoadRunner.milliseconds(ContinuousClock.now - loadStart) / 1000
            print(
                String(
                    format: "bulk-loaded %d messages into %d channels in %.1f s (SQL, %.0f rows/s)", messages, channels, loadSeconds,
                    Double(messages) / loadSeconds))

            let runner = load.runner
            let sends = try await runner.run { worker, iteration in
                let channel = channelIds[(worker + iteration) % channelIds.count]
                return try await client.send(
                    .POST, "/v1/workspaces/\(workspace)/channels/\(channel)/chats", token: token,
                    json: #"{"content":"bench message \#(worker)-\#(iteration)"}"#
                ).status == .ok
            }
            print(sends.line("POST .../chats (send)", concurrency: load.concurrency))

            var cursors: [String: String] = [:]
            for channel in channelIds {
                guard let id = UUID(uuidString: channel) else { continue }
                // Benchmark setup only (the service never pages with OFFSET).
                for try await ms in try await postgres.query(
                    """
                    SELECT (extract(epoch FROM created_at) * 1000)::bigint FROM messages WHERE conversation_id = \(id)
                    ORDER BY created_at DESC OFFSET 50 LIMIT 1
                    """, logger: logger
                ).decode(Int64.self) {
                    cursors[channel] = Timestamp.format(milliseconds: ms)
                }
            }
            let frozen = cursors
            let reads = try await runner.run { worker, iteration in
                let channel = channelIds[(worker * 7 + iteration) % channelIds.count]
                guard let cursor = frozen[channel] else { return false }
                let response = try await client.send(.GET, "/v1/workspaces/\(workspace)/channels/\(channel)/chats?cursor_date=\(cursor)", token: token)
                let count = ((try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))) as? [Any])?.count
                return response.status == .ok && count == 50
            }
            print(reads.line("GET .../chats?cursor_date= (50 newer, \(messages + sends.ok) messages)", concurrency: load.concurrency))
        }
    }

    /// The user id inside an access token (the bench's own, just issued).
    private func user(of token: String) throws -> UUID {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { throw ValidationError("unexpected token") }
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        guard let data = Data(base64Encoded: payload), let claims = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let sub = claims["sub"] as? String, let id = UUID(uuidString: sub)
        else { throw ValidationError("no subject in token") }
        return id
    }

    /// Inserts the history in 1M-row statements, round-robin over the channels, one millisecond
    /// apart per channel and in the past; then moves each channel's clock to its newest message.
    /// Message ids are the run's 8-hex-digit tag followed by a counter (ascending, and distinct
    /// from an earlier run's against the same database).
    private func bulkLoad(_ postgres: PostgresClient, channels: [String], sender: UUID, idPrefix: String, logger: Logger) async throws {
        let ids = channels.compactMap(UUID.init(uuidString:))
        let batch = 1_000_000
        var done = 0
        while done < messages {
            let count = min(batch, messages - done)
            let first = done
            _ = try await postgres.query(
                """
                INSERT INTO messages (id, conversation_id, sender_id, content, files, created_at)
                SELECT (\(idPrefix) || lpad(to_hex(\(Int64(first)) + i), 24, '0'))::uuid,
                       (\(ids)::uuid[])[1 + ((\(Int64(first)) + i) % \(ids.count))],
                       \(sender), 'history message ' || (\(Int64(first)) + i), '{}',
                       date_trunc('milliseconds', now()) - interval '1 day'
                         + (((\(Int64(first)) + i) / \(ids.count)) * interval '1 millisecond')
                FROM generate_series(0::bigint, \(Int64(count - 1))) AS i
                """, logger: logger)
            done += count
            print("  loaded \(done) / \(messages)")
        }
        _ = try await postgres.query(
            """
            UPDATE channels c SET last_message_at = greatest(c.last_message_at, (SELECT max(created_at) FROM messages m WHERE m.conversation_id = c.id))
            WHERE c.id = ANY(\(ids))
            """, logger: logger)
        _ = try await postgres.query("ANALYZE messages", logger: logger)
    }
}
