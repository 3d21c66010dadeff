import Database

/// The push schema: read models (device tokens from `auth.user.v1`; workspaces, their members and
/// channel members from `workspace.v1`; presence from `presence.v1`), per-conversation settings,
/// unread counters for the badge, and the notifications to send (one row per message and device:
/// the primary key is what makes a notification go out at most once per device).
enum PushMigrations {
    static let all: [Migration] = [
        Migration(
            100, "read models, settings, unread counters, notifications",
            """
            CREATE TABLE device_tokens (
                token text PRIMARY KEY,
                user_id uuid NOT NULL,
                added_at timestamptz NOT NULL
            );
            CREATE INDEX device_tokens_user ON device_tokens (user_id);
            CREATE TABLE workspaces (
                id uuid PRIMARY KEY,
                name text NOT NULL
            );
            \(WorkspaceMembersProjection.createTable);
            CREATE TABLE channel_members (
                channel_id uuid NOT NULL,
                user_id uuid NOT NULL,
                PRIMARY KEY (channel_id, user_id)
            );
            CREATE TABLE presence (
                user_id uuid PRIMARY KEY,
                online boolean NOT NULL,
                last_seen timestamptz NOT NULL
            );
            CREATE TABLE notification_settings (
                user_id uuid NOT NULL,
                conversation_id uuid NOT NULL,
                mode text NOT NULL CHECK (mode IN ('all', 'mentions', 'none')),
                PRIMARY KEY (user_id, conversation_id)
            );
            CREATE TABLE unread_counts (
                user_id uuid NOT NULL,
                conversation_id uuid NOT NULL,
                count integer NOT NULL,
                PRIMARY KEY (user_id, conversation_id)
            );
            CREATE TABLE notifications (
                message_id uuid NOT NULL,
                token text NOT NULL,
                user_id uuid NOT NULL,
                provider text NOT NULL CHECK (provider IN ('fcm', 'apns')),
                payload jsonb NOT NULL,
                -- When the message was committed at chat: the start of the commit → provider latency.
                message_at timestamptz NOT NULL,
                status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'dropped', 'failed')),
                attempts integer NOT NULL DEFAULT 0,
                next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                last_error text,
                sent_at timestamptz,
                PRIMARY KEY (message_id, token)
            );
            CREATE INDEX notifications_due ON notifications (next_attempt_at) WHERE status = 'pending';
            """
        ),
        Migration(
            101, "study app tokens",
            """
            -- The study app's users (Firebase uids) and their FCM tokens, from study.v1.
            CREATE TABLE study_tokens (
                uid text PRIMARY KEY,
                token text NOT NULL,
                changed_at timestamptz NOT NULL
            );
            -- Study notifications name no suite user: user_id is null, study_uid names the recipient.
            ALTER TABLE notifications ALTER COLUMN user_id DROP NOT NULL, ADD COLUMN study_uid text;
            """
        ),
    ]
}
