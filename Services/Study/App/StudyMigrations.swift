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
            """),
        Migration(
            101, "matching queue",
            """
            -- Geography: earthdistance over cube (contrib). Both ship with PostgreSQL; cube is trusted,
            -- earthdistance is not, so deployments create it as a superuser (deploy/postgres).
            CREATE EXTENSION IF NOT EXISTS cube;
            CREATE EXTENSION IF NOT EXISTS earthdistance;

            -- One row per user who started searching (POST /v1/queue) and has not stopped: searching
            -- while matched_uid is null, then the study with matched_uid until the user searches again
            -- or stops. Every change to a user's row happens with that user's users row locked.
            CREATE TABLE queue (
                uid text PRIMARY KEY REFERENCES users (uid) ON DELETE CASCADE,
                lat double precision NOT NULL,
                long double precision NOT NULL,
                -- ll_to_earth(lat, long), stored: the GiST index below covers searching rows.
                location earth NOT NULL,
                studylist text[] NOT NULL,
                queued_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
                -- The partner (no foreign key: a partner who withdraws leaves the uid behind).
                matched_uid text,
                matched_nick text,
                matched_at timestamptz,
                -- Either side cancelled the study (POST /v1/queue/dodge).
                dodged boolean NOT NULL DEFAULT false,
                -- This user rated the partner (POST /v1/queue/rate).
                reviewed boolean NOT NULL DEFAULT false,
                CHECK ((matched_uid IS NULL) = (matched_at IS NULL))
            );
            CREATE INDEX queue_searching_location ON queue USING gist (location) WHERE matched_uid IS NULL;

            -- Open study requests between searching users; they go with either side's queue row,
            -- and a match removes every request of both.
            CREATE TABLE study_requests (
                from_uid text NOT NULL REFERENCES queue (uid) ON DELETE CASCADE,
                to_uid text NOT NULL REFERENCES queue (uid) ON DELETE CASCADE,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
                PRIMARY KEY (from_uid, to_uid),
                CHECK (from_uid <> to_uid)
            );
            CREATE INDEX study_requests_to ON study_requests (to_uid);
            """),
        Migration(
            102, "study chats",
            """
            -- Chats between matched users (POST /v1/chat/{to}); read by either of the two.
            CREATE TABLE chats (
                -- The app's `_id`: 24 hex digits.
                id text PRIMARY KEY,
                from_uid text NOT NULL,
                to_uid text NOT NULL,
                chat text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
                CHECK (from_uid <> to_uid)
            );
            -- A pair's history in time order, whichever way each chat went.
            CREATE INDEX chats_pair ON chats (least(from_uid, to_uid), greatest(from_uid, to_uid), created_at, id);
            """),
        Migration(
            103, "App Store purchases",
            """
            -- Each App Store transaction grants its item once, to one user (POST /v1/user/shop/ios).
            CREATE TABLE purchases (
                transaction_id text PRIMARY KEY,
                uid text NOT NULL,
                product_id text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
            );
            """),
    ]
}
