import Database

/// The presence schema: who is in which workspace (from `workspace.v1`, for the REST answer and
/// the workspaces named in each status event) and the status last published per user.
enum PresenceMigrations {
    static let all: [Migration] = [
        Migration(
            100, "workspace members, published status",
            """
            \(WorkspaceMembersProjection.createTable);
            CREATE INDEX workspace_members_user ON workspace_members (user_id);
            -- Written only by the leading replica, with the presence.v1 event in its outbox.
            CREATE TABLE presence_status (
                user_id uuid PRIMARY KEY,
                status text NOT NULL CHECK (status IN ('online', 'offline')),
                last_seen timestamptz NOT NULL,
                changed_at timestamptz NOT NULL DEFAULT clock_timestamp()
            );
            CREATE INDEX presence_status_online ON presence_status (user_id) WHERE status = 'online';
            """
        )
    ]
}
