import Database
import Testing

@Suite("SQL script splitting")
struct SQLStatementsTests {
    @Test func splitsAtTopLevelSemicolons() {
        let script = """
            -- a comment; with a semicolon
            CREATE TABLE a (v text DEFAULT 'x;y''z');
            /* block; comment */ CREATE INDEX i ON a (v);
            CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
            DO $$ BEGIN PERFORM 1; END $$;
            SELECT "semi;colon" FROM a
            """
        let parts = SQLStatements.split(script)
        #expect(
            parts == [
                "CREATE TABLE a (v text DEFAULT 'x;y''z')",
                "CREATE INDEX i ON a (v)",
                "CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql",
                "DO $$ BEGIN PERFORM 1; END $$",
                "SELECT \"semi;colon\" FROM a",
            ])
    }

    @Test func emptyScriptHasNoStatements() {
        #expect(SQLStatements.split("  ;; -- nothing\n").isEmpty)
    }
}
