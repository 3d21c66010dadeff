import Database

/// The chat schema: read models of membership (from `workspace.v1`) and profiles (from
/// `auth.user.v1`), and the messages. Message timestamps are milliseconds, strictly increasing
/// per channel (see `MessageStore.insert`), so the contract's exclusive cursor never skips or
/// repeats a row.
enum ChatMigrations {
    static let all: [Migration] = [
        Migration(
            100, "profiles, membership read model, DM rooms, messages",
            """
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
            CREATE TABLE dm_rooms (
                id uuid PRIMARY KEY,
                workspace_id uuid NOT NULL,
                -- The participants in a canonical order (equal for a note-to-self room).
                user_low uuid NOT NULL,
                user_high uuid NOT NULL CHECK (user_low <= user_high),
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
                last_message_at timestamptz NOT NULL DEFAULT '-infinity',
                UNIQUE (workspace_id, user_low, user_high)
            );
            CREATE INDEX dm_rooms_high ON dm_rooms (workspace_id, user_high);
            -- Messages of channels and DM rooms alike: `conversation_id` is the channel or room id.
            CREATE TABLE messages (
                id uuid PRIMARY KEY,
                conversation_id uuid NOT NULL,
                sender_id uuid NOT NULL,
                content text,
                files text[] NOT NULL DEFAULT '{}',
                nonce text,
                created_at timestamptz NOT NULL
            );
            CREATE INDEX messages_history ON messages (conversation_id, created_at, id);
            -- Serving a file checks the message it belongs to.
            CREATE INDEX messages_files ON messages USING gin (files) WHERE files <> '{}';
            CREATE UNIQUE INDEX messages_nonce ON messages (conversation_id, sender_id, nonce) WHERE nonce IS NOT NULL;
            """),
        Migration(
            101, "replies, edits, deletes, mentions, reactions, read cursors, content search",
            """
            ALTER TABLE messages
                ADD COLUMN parent_id uuid,
                ADD COLUMN mentions uuid[] NOT NULL DEFAULT '{}',
                -- The reactions summary as clients see it (kept with the reactions table in one
                -- transaction), so history reads no other table.
                ADD COLUMN reactions jsonb,
                ADD COLUMN edited_at timestamptz,
                ADD COLUMN deleted_at timestamptz;
            CREATE INDEX messages_mentions ON messages USING gin (mentions) WHERE mentions <> '{}';
            -- Korean partial words: trigram matching (full-text search does not split CJK).
            CREATE INDEX messages_content_trgm ON messages USING gin (content gin_trgm_ops) WHERE deleted_at IS NULL;
            CREATE TABLE reactions (
                message_id uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
                emoji text NOT NULL,
                user_id uuid NOT NULL,
                created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                PRIMARY KEY (message_id, emoji, user_id)
            );
            CREATE TABLE read_cursors (
                user_id uuid NOT NULL,
                conversation_id uuid NOT NULL,
                read_at timestamptz NOT NULL,
                PRIMARY KEY (user_id, conversation_id)
            );
            """),
        Migration(
            102, "replay: edits and deletions since a cursor",
            """
            -- A resume's replay asks, per conversation, for the messages edited or deleted after its
            -- cursor (MessageStore.changes): without these it would read the conversation's whole
            -- history before the cursor. Partial, so they hold only edited or deleted messages.
            CREATE INDEX messages_edited ON messages (conversation_id, edited_at) WHERE edited_at IS NOT NULL AND deleted_at IS NULL;
            CREATE INDEX messages_deleted ON messages (conversation_id, deleted_at) WHERE deleted_at IS NOT NULL;
            """),
        Migration(
            103, "integer aliases for legacy clients (Smooth): users and channels from events, rooms of our own",
            """
            \(IntegerAlias.createFunction);
            \(ProfileProjection.addLegacyColumns);
            -- The channel's alias as workspace.v1 carries it (null for channels created before aliases).
            ALTER TABLE channels ADD COLUMN alias bigint;
            CREATE UNIQUE INDEX channels_alias ON channels (alias);
            \(IntegerAlias.addColumn(to: "dm_rooms"));
            -- Workspaces' aliases (Smooth's community ids), from workspace.v1: the gateway asks chat
            -- whether a user is in a community it names by alias.
            CREATE TABLE workspace_aliases (workspace_id uuid PRIMARY KEY, alias bigint NOT NULL UNIQUE);
            """),
        Migration(
            104, "personal rooms: friends' rooms and groups outside workspaces; friendship and presence projections",
            """
            -- A personal room belongs to no workspace. A friends' room keeps its pair in
            -- user_low/user_high (one per pair); a group has a name, an icon and an owner. Their
            -- members are in room_members (a workspace room's are its pair).
            ALTER TABLE dm_rooms
                ALTER COLUMN workspace_id DROP NOT NULL,
                ALTER COLUMN user_low DROP NOT NULL,
                ALTER COLUMN user_high DROP NOT NULL,
                ADD COLUMN is_group boolean NOT NULL DEFAULT false,
                ADD COLUMN name text,
                ADD COLUMN icon text,
                ADD COLUMN owner_id uuid,
                ADD CHECK (workspace_id IS NOT NULL OR is_group OR (user_low IS NOT NULL AND user_high IS NOT NULL)),
                ADD CHECK (workspace_id IS NULL OR NOT is_group);
            CREATE UNIQUE INDEX dm_rooms_friends ON dm_rooms (user_low, user_high) WHERE workspace_id IS NULL AND NOT is_group;
            CREATE TABLE room_members (
                room_id uuid NOT NULL REFERENCES dm_rooms (id) ON DELETE CASCADE,
                user_id uuid NOT NULL,
                joined_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                -- A friends' room closed by this member: hidden from their list until it is opened
                -- again or a new message arrives (the member keeps reading it).
                hidden boolean NOT NULL DEFAULT false,
                PRIMARY KEY (room_id, user_id)
            );
            CREATE INDEX room_members_user ON room_members (user_id);
            -- Links that let anyone with the code join a group for a day.
            CREATE TABLE room_invitations (
                code text PRIMARY KEY,
                room_id uuid NOT NULL REFERENCES dm_rooms (id) ON DELETE CASCADE,
                created_by uuid NOT NULL,
                expires_at timestamptz NOT NULL
            );
            CREATE INDEX room_invitations_room ON room_invitations (room_id, expires_at);
            -- Projection of auth.user.v1's friendships, one row per side (as auth publishes them).
            CREATE TABLE friendships (
                user_id uuid NOT NULL,
                friend_id uuid NOT NULL,
                state text NOT NULL,
                PRIMARY KEY (user_id, friend_id)
            );
            \(PresenceProjection.createTable);
            """),
        Migration(
            105, "channels a workspace member joins by reading them (workspace.channel-created's joinable)",
            """
            -- Channels created before the flag stay closed to joining by reading (E13 as before).
            ALTER TABLE channels ADD COLUMN joinable boolean NOT NULL DEFAULT false;
            """),
        Migration(
            106, "Gen A names channels: a thread's parent (threads are not named by Gen A), the name index",
            """
            ALTER TABLE channels ADD COLUMN parent_id uuid;
            CREATE INDEX channels_name ON channels (workspace_id, lower(name)) WHERE parent_id IS NULL;
            """),
        Migration(
            107, "memberships by user; unread counts from the history index alone",
            """
            -- A user's channels and workspaces (a native session's snapshot, a user leaving a
            -- workspace) were a scan of every membership: the primary keys lead with the channel
            -- and the workspace.
            CREATE INDEX channel_members_user ON channel_members (user_id, channel_id);
            CREATE INDEX workspace_members_user ON workspace_members (user_id, workspace_id);
            -- An unread count (sender and deletion filtered per message) read every unread
            -- message's row: one heap page each, since a conversation's messages are spread among
            -- everyone's (40 ms for a user with two channels of 2 000 unread). With the two columns
            -- in the history index the count reads the index alone (0.8 ms). The index is rebuilt
            -- in this transaction: writes to messages wait for it (about 0.8 s per million rows).
            CREATE INDEX messages_history_counted ON messages (conversation_id, created_at, id) INCLUDE (sender_id, deleted_at);
            DROP INDEX messages_history;
            ALTER INDEX messages_history_counted RENAME TO messages_history;
            """),
    ]
}
