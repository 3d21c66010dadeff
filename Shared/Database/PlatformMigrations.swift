/// Tables every service with a database has: the outbox (events to publish), its dead letters
/// (records the broker refused for good) and the inbox (events already processed). Services list these first, then their own migrations from 100 on.
public enum PlatformMigrations {
    public static let all: [Migration] = [
        Migration(
            1, "outbox",
            """
            CREATE TABLE outbox (
                id bigserial PRIMARY KEY,
                event_id uuid NOT NULL UNIQUE,
                topic text NOT NULL,
                event_key text NOT NULL,
                event_type text NOT NULL,
                payload bytea,
                created_at timestamptz NOT NULL DEFAULT now(),
                published_at timestamptz
            );
            CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
            CREATE INDEX outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;
            """),
        Migration(
            2, "inbox",
            """
            CREATE TABLE inbox (
                consumer text NOT NULL,
                event_id uuid NOT NULL,
                processed_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (consumer, event_id)
            );
            CREATE INDEX inbox_processed_at ON inbox (processed_at);
            """),
        // Outbox rows the broker refused permanently (too large, invalid): moved here by the relay
        // with the refusal, so they never block the rows behind them. Kept for operators (see
        // "Outbox and inbox" in docs/configuration.md); `id` is the outbox row's.
        Migration(
            3, "outbox dead letters",
            """
            CREATE TABLE outbox_dead_letters (
                id bigint PRIMARY KEY,
                event_id uuid NOT NULL,
                topic text NOT NULL,
                event_key text NOT NULL,
                event_type text NOT NULL,
                payload bytea,
                created_at timestamptz NOT NULL,
                error_code integer NOT NULL,
                error text NOT NULL,
                dead_lettered_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX outbox_dead_letters_at ON outbox_dead_letters (dead_lettered_at);
            """),
        // The W3C trace context of the transaction that wrote the event (null without tracing):
        // the relay puts it on the record, so the trace continues in every consumer.
        Migration(
            4, "outbox trace context",
            """
            ALTER TABLE outbox ADD COLUMN traceparent text, ADD COLUMN tracestate text;
            """),
    ]
}
