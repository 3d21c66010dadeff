import Database

/// The auth schema. Timestamps are produced by PostgreSQL truncated to milliseconds, the
/// precision clients keep (see the client contract §4).
enum AuthMigrations {
    static let all: [Migration] = [
        Migration(
            100, "users, refresh tokens, device tokens",
            """
            CREATE TABLE users (
                id uuid PRIMARY KEY,
                email text NOT NULL,
                password_hash text,
                nickname text NOT NULL,
                phone text,
                profile_image text,
                provider text,
                user_code text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
                updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
            );
            CREATE UNIQUE INDEX users_email ON users (lower(email));
            CREATE TABLE refresh_tokens (
                token_hash bytea PRIMARY KEY,
                user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                created_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                revoked_at timestamptz
            );
            CREATE INDEX refresh_tokens_user ON refresh_tokens (user_id) WHERE revoked_at IS NULL;
            CREATE TABLE device_tokens (
                user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                token text NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (user_id, token)
            );
            CREATE TABLE coin_balances (
                user_id uuid PRIMARY KEY,
                balance bigint NOT NULL DEFAULT 0
            );
            """),
        Migration(
            101, "social identities",
            """
            CREATE TABLE social_identities (
                provider text NOT NULL,
                subject text NOT NULL,
                user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                created_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (provider, subject)
            );
            CREATE INDEX social_identities_user ON social_identities (user_id);
            """),
        Migration(
            102, "friendships",
            """
            CREATE TABLE friendships (
                id uuid PRIMARY KEY,
                requester_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                addressee_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                accepted boolean NOT NULL DEFAULT false,
                banned_by uuid REFERENCES users (id) ON DELETE CASCADE,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
                CHECK (requester_id <> addressee_id)
            );
            -- One relationship per pair, whoever asked first.
            CREATE UNIQUE INDEX friendships_pair ON friendships (LEAST(requester_id, addressee_id), GREATEST(requester_id, addressee_id));
            CREATE INDEX friendships_addressee ON friendships (addressee_id);
            CREATE INDEX users_tag ON users (lower(nickname), user_code);
            """),
        Migration(
            103, "coin balance versions (payment.v1 projection)",
            """
            -- The version of the payment ledger's balance this row holds; older events are ignored.
            ALTER TABLE coin_balances ADD COLUMN version bigint NOT NULL DEFAULT 0;
            """),
        Migration(
            104, "a device token belongs to one user",
            """
            -- A device (its push token) is signed in to one account at a time: keep each token's
            -- most recent owner, then hold it to that.
            DELETE FROM device_tokens d USING device_tokens newer
             WHERE d.token = newer.token AND (d.updated_at, d.user_id) < (newer.updated_at, newer.user_id);
            CREATE UNIQUE INDEX device_tokens_token ON device_tokens (token);
            """),
        Migration(
            105, "integer aliases of users and friendships (legacy clients)",
            IntegerAlias.createFunction + ";\n" + IntegerAlias.addColumn(to: "users") + ";\n" + IntegerAlias.addColumn(to: "friendships")),
        Migration(
            106, "user bios",
            """
            -- Smooth's profile text (its server's column was 190 long).
            ALTER TABLE users ADD COLUMN bio text CHECK (char_length(bio) <= 190);
            """),
        Migration(
            107, "email verification codes",
            """
            -- One pending code per address (Smooth's send-mail / check-email). The code is stored as
            -- an HMAC only; it expires, allows a few wrong tries when checked by address, and the
            -- last send time rate-limits new codes.
            CREATE TABLE email_codes (
                email text PRIMARY KEY,
                code_hash bytea NOT NULL,
                sent_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                attempts integer NOT NULL DEFAULT 0,
                verified_at timestamptz
            );
            -- A key-only check finds its code by hash; two pending addresses never share one.
            CREATE UNIQUE INDEX email_codes_hash ON email_codes (code_hash);
            CREATE INDEX email_codes_expiry ON email_codes (expires_at);
            """),
        Migration(
            108, "users whose alias no event has carried yet",
            """
            -- Users from before aliases: their alias and tag go out once in a UserProfileUpdated
            -- (AliasAnnouncement, at start). Users created from now on announce theirs on creation.
            ALTER TABLE users ADD COLUMN alias_announced boolean NOT NULL DEFAULT false;
            ALTER TABLE users ALTER COLUMN alias_announced SET DEFAULT true;
            CREATE INDEX users_alias_unannounced ON users (id) WHERE NOT alias_announced;
            """),
    ]
}
