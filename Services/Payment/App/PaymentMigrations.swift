import Database

/// The payment schema: the store's catalogue, billings (one per PortOne `imp_uid`), the coin
/// ledger with each user's balance, and the debit requests of the workspace saga.
///
/// The database enforces the money rules, not the code paths: a balance can never go below zero
/// (CHECK), a payment is billed once (UNIQUE imp_uid), a debit request is decided once and
/// debited/refunded at most once (primary key and partial unique indexes), and ledger entries
/// cannot be changed or removed (trigger). A ledger entry and its balance change share one
/// transaction, so the balance always equals the sum of the user's entries.
enum PaymentMigrations {
    static let all: [Migration] = [
        Migration(
            100, "store items, billings, coin ledger, debit requests",
            """
            CREATE TABLE store_items (
                item text PRIMARY KEY,           -- the product name clients show and PortOne echoes as `name`
                price integer NOT NULL CHECK (price > 0),   -- KRW charged
                coins integer NOT NULL CHECK (coins > 0),   -- coins credited
                position integer NOT NULL UNIQUE
            );
            INSERT INTO store_items (item, price, coins, position) VALUES
                ('10 Coin', 100, 10, 1), ('50 Coin', 500, 50, 2), ('100 Coin', 1000, 100, 3);

            CREATE TABLE coin_balances (
                user_id uuid PRIMARY KEY,
                balance bigint NOT NULL CHECK (balance >= 0),
                -- Bumped by every ledger entry of the user: events carry it so projections
                -- apply only newer balances.
                version bigint NOT NULL CHECK (version > 0)
            );

            CREATE TABLE billings (
                id uuid PRIMARY KEY,
                imp_uid text NOT NULL UNIQUE,
                merchant_uid text NOT NULL,
                buyer_id uuid NOT NULL,
                item text NOT NULL,
                price integer NOT NULL,
                coins integer NOT NULL,
                paid_at timestamptz NOT NULL,
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
            );
            CREATE INDEX billings_buyer ON billings (buyer_id);

            -- A debit request of the coin saga, decided once.
            CREATE TABLE debit_requests (
                request_id uuid PRIMARY KEY,
                workspace_id uuid NOT NULL,
                user_id uuid NOT NULL,
                amount bigint NOT NULL,
                outcome text NOT NULL CHECK (outcome IN ('debited', 'rejected')),
                decided_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
            );

            -- Append-only: `delta` is signed (credit and refund > 0, debit < 0).
            CREATE TABLE coin_ledger (
                id bigserial PRIMARY KEY,
                user_id uuid NOT NULL,
                version bigint NOT NULL,
                kind text NOT NULL CHECK (kind IN ('credit', 'debit', 'refund')),
                delta bigint NOT NULL CHECK ((kind = 'debit') = (delta < 0) AND delta <> 0),
                balance_after bigint NOT NULL CHECK (balance_after >= 0),
                billing_id uuid UNIQUE REFERENCES billings (id),
                request_id uuid REFERENCES debit_requests (request_id),
                created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
                UNIQUE (user_id, version),
                CHECK ((kind = 'credit') = (billing_id IS NOT NULL)),
                CHECK ((kind = 'credit') = (request_id IS NULL))
            );
            CREATE UNIQUE INDEX coin_ledger_one_debit ON coin_ledger (request_id) WHERE kind = 'debit';
            CREATE UNIQUE INDEX coin_ledger_one_refund ON coin_ledger (request_id) WHERE kind = 'refund';

            CREATE FUNCTION coin_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION 'coin_ledger is append-only';
            END $$;
            CREATE TRIGGER coin_ledger_append_only BEFORE UPDATE OR DELETE ON coin_ledger
                FOR EACH STATEMENT EXECUTE FUNCTION coin_ledger_append_only();
            """)
    ]
}
