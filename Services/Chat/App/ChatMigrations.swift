import Database

/// The chat schema: read models of membership (from `workspace.v1`) and profiles (from
/// `auth.user.v1`), and the messages. Message timestamps are milliseconds, strictly increasing
/// per channel (see `MessageStore.insert`), so the contract's exclusive cursor never skips or
/// repeats a row.
enum ChatMigrations {
    static let all: [Migration] = [
        Migration(100, "profiles, membership read model, channel messages", """
            CREATE EXTENSION IF NOT EXISTS pg_trgm;
            \(ProfileProjection.createTable);
            CREATE TABLE channels (
                id uuid PRIMARY KEY,
                workspace_id uuid NOT NULL,
                name text NOT NULL,
                -- The newest message's time: the per-channel clock (and lock) of inserts.
                last_message_at timestamptz NOT NULL DEFAULT '-infinity'
            );
            CREATE INDEX channels_workspace ON channels (workspace_id);
            CREATE TABLE channel_members (
                channel_id uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
                user_id uuid NOT NULL,
                PRIMARY KEY (channel_id, user_id)
            );
            CREATE TABLE workspace_members (
                workspace_id uuid NOT NULL,
                user_id uuid NOT NULL,
                PRIMARY KEY (workspace_id, user_id)
            );
            CREATE TABLE channel_messages (
                id uuid PRIMARY KEY,
                channel_id uuid NOT NULL,
                sender_id uuid NOT NULL,
                content text,
                files text[] NOT NULL DEFAULT '{}',
                nonce text,
                created_at timestamptz NOT NULL
            );
            CREATE INDEX channel_messages_history ON channel_messages (channel_id, created_at, id);
            CREATE UNIQUE INDEX channel_messages_nonce ON channel_messages (channel_id, sender_id, nonce) WHERE nonce IS NOT NULL;
            """),
    ]
}
