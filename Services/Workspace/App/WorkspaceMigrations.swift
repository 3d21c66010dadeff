import Database

/// The workspace schema. Timestamps are produced by PostgreSQL truncated to milliseconds (the
/// precision clients keep, client contract §4). Names are unique case-insensitively; the
/// indexes, not pre-checks, decide races (a violation becomes E12).
enum WorkspaceMigrations {
    static let all: [Migration] = [
        Migration(
            100, "user profile projection, workspaces, members, categories, channels",
            """
            CREATE EXTENSION IF NOT EXISTS pg_trgm;
            -- Projection of auth.user.v1: what member lists show.
            \(ProfileProjection.createTable);
            CREATE TABLE workspaces (
                id uuid PRIMARY KEY,
                name text NOT NULL,
                description text,
                cover_image text,
                owner_id uuid NOT NULL,
                -- 'pending' while the coin debit of its creation is unanswered; invisible until 'active'.
                state text NOT NULL DEFAULT 'active' CHECK (state IN ('pending', 'active')),
                debit_request_id uuid UNIQUE,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
            );
            CREATE UNIQUE INDEX workspaces_name ON workspaces (lower(name));
            CREATE TABLE workspace_members (
                workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
                user_id uuid NOT NULL,
                joined_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
                PRIMARY KEY (workspace_id, user_id)
            );
            CREATE INDEX workspace_members_user ON workspace_members (user_id);
            CREATE TABLE categories (
                id uuid PRIMARY KEY,
                workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
                name text NOT NULL,
                position integer NOT NULL,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
            );
            CREATE INDEX categories_workspace ON categories (workspace_id, position);
            CREATE TABLE channels (
                id uuid PRIMARY KEY,
                workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
                category_id uuid NOT NULL REFERENCES categories (id),
                position integer NOT NULL,
                name text NOT NULL,
                description text,
                cover_image text,
                owner_id uuid NOT NULL,
                is_default boolean NOT NULL DEFAULT false,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
            );
            CREATE UNIQUE INDEX channels_name ON channels (workspace_id, lower(name));
            CREATE UNIQUE INDEX channels_default ON channels (workspace_id) WHERE is_default;
            CREATE INDEX channels_category ON channels (category_id, position);
            CREATE INDEX channels_name_trgm ON channels USING gin (name gin_trgm_ops);
            CREATE TABLE channel_members (
                channel_id uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
                user_id uuid NOT NULL,
                joined_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
                PRIMARY KEY (channel_id, user_id)
            );
            CREATE INDEX channel_members_user ON channel_members (user_id);
            """),
        Migration(
            101, "invite codes",
            """
            CREATE TABLE invites (
                code text PRIMARY KEY,
                workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
                created_by uuid NOT NULL,
                max_uses integer CHECK (max_uses IS NULL OR max_uses > 0),
                uses integer NOT NULL DEFAULT 0,
                expires_at timestamptz,
                revoked boolean NOT NULL DEFAULT false,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
            );
            CREATE INDEX invites_workspace ON invites (workspace_id);
            """),
        Migration(
            102, "Smooth communities: integer aliases, kinds, channel types, private categories and channels, presence",
            """
            \(IntegerAlias.createFunction);
            \(IntegerAlias.addColumn(to: "workspaces"));
            \(IntegerAlias.addColumn(to: "categories"));
            \(IntegerAlias.addColumn(to: "channels"));
            \(IntegerAlias.addColumn(to: "invites"));
            \(ProfileProjection.addLegacyColumns);
            -- A Smooth community is a workspace of its own kind: each surface sees only its kind, and
            -- community names (like Discord servers') need not be unique.
            ALTER TABLE workspaces
                ADD COLUMN kind text NOT NULL DEFAULT 'workspace' CHECK (kind IN ('workspace', 'community')),
                ADD COLUMN public boolean NOT NULL DEFAULT true;
            DROP INDEX workspaces_name;
            CREATE UNIQUE INDEX workspaces_name ON workspaces (lower(name)) WHERE kind = 'workspace';
            CREATE INDEX workspace_members_joined ON workspace_members (user_id, joined_at);
            ALTER TABLE categories ADD COLUMN public boolean NOT NULL DEFAULT true;
            -- Who sees a private category (its creator, the members named at creation, the owner).
            CREATE TABLE category_members (
                category_id uuid NOT NULL REFERENCES categories (id) ON DELETE CASCADE,
                user_id uuid NOT NULL,
                PRIMARY KEY (category_id, user_id)
            );
            CREATE INDEX category_members_user ON category_members (user_id);
            ALTER TABLE channels
                ADD COLUMN type text NOT NULL DEFAULT 'TEXT' CHECK (type IN ('TEXT', 'VOICE')),
                ADD COLUMN public boolean NOT NULL DEFAULT true;
            -- Names are unique per type: a text and a voice channel may share one (a community's two
            -- default channels are both "일반"); /v1 channels are all text, so nothing changes there.
            DROP INDEX channels_name;
            CREATE UNIQUE INDEX channels_name ON channels (workspace_id, type, lower(name));
            -- Projection of presence.v1: the status Smooth's member list shows.
            \(PresenceProjection.createTable);
            """),
        Migration(
            103, "threads: channels under a channel",
            """
            -- A thread is a channel whose parent is a channel (one level): it shares the parent's
            -- category, visibility and members. No cascade: deleting a channel deletes its threads
            -- explicitly, each with its workspace.channel-deleted event.
            ALTER TABLE channels ADD COLUMN parent_id uuid REFERENCES channels (id);
            CREATE INDEX channels_parent ON channels (parent_id, created_at) WHERE parent_id IS NOT NULL;
            -- Channel names stay unique per workspace and type; thread names per parent.
            DROP INDEX channels_name;
            CREATE UNIQUE INDEX channels_name ON channels (workspace_id, type, lower(name)) WHERE parent_id IS NULL;
            CREATE UNIQUE INDEX threads_name ON channels (parent_id, lower(name)) WHERE parent_id IS NOT NULL;
            """),
    ]
}
