import Database

/// The study schema. Times are PostgreSQL's, truncated to milliseconds (the app's dates carry
/// milliseconds).
enum StudyMigrations {
    static let all: [Migration] = [
        Migration(
            100, "study users",
            """
            -- One row per registered Firebase user; withdrawing deletes it (the uid may register again).
            CREATE TABLE users (
                uid text PRIMARY KEY,
                -- The app's `_id`: 24 hex digits, as the original (MongoDB) server gave.
                object_id text NOT NULL UNIQUE,
                phone_number text NOT NULL,
                email text NOT NULL,
                fcm_token text NOT NULL,
                nick text NOT NULL,
                birth timestamptz NOT NULL,
                gender smallint NOT NULL CHECK (gender IN (-1, 0, 1)),
                study text NOT NULL DEFAULT '',
                comment text[] NOT NULL DEFAULT '{}',
                reputation integer[] NOT NULL DEFAULT '{0,0,0,0,0,0,0,0,0}',
                sesac integer NOT NULL DEFAULT 0,
                sesac_collection integer[] NOT NULL DEFAULT '{0}',
                background integer NOT NULL DEFAULT 0,
                background_collection integer[] NOT NULL DEFAULT '{0}',
                purchase_token text[] NOT NULL DEFAULT '{}',
                transaction_id text[] NOT NULL DEFAULT '{}',
                reviewed_before text[] NOT NULL DEFAULT '{}',
                reported_num integer NOT NULL DEFAULT 0,
                reported_user text[] NOT NULL DEFAULT '{}',
                dodge_penalty bigint NOT NULL DEFAULT 0,
                dodge_num integer NOT NULL DEFAULT 0,
                age_min integer NOT NULL DEFAULT 18,
                age_max integer NOT NULL DEFAULT 65,
                searchable smallint NOT NULL DEFAULT 1 CHECK (searchable IN (0, 1)),
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
            );
            """)
    ]
}
