extension PostgresMigrations {
    /// A message between two local accounts is one body row, not two full rows, as on SQLite
    /// (v20_perf_archive): `archive_bodies` holds it once, with `owners`, how many archives
    /// hold it; `archive_entries` one narrow row per archive that holds it, at the body's
    /// position (`id`), with the other party for the `with` filter and `has_origin_id` (true
    /// or NULL) for the partial index a login's recent origin-ids are read through. Measured
    /// (bench/README.md, PostgreSQL), two full rows with seven indexes each were most of
    /// PostgreSQL's CPU per message. The bodies' ids, origin-ids and times are indexed once
    /// per message, not per owner. Deleting entries (the per-user limit, an account's
    /// deletion, the retention sweep) releases their bodies through a statement trigger.
    /// Existing rows keep their positions: each becomes a body of its own with one entry.
    static let archiveBodies = """
        CREATE TABLE archive_bodies (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            owners INTEGER NOT NULL,
            from_bare TEXT NOT NULL,
            from_jid TEXT NOT NULL,
            to_jid TEXT NOT NULL,
            stanza_id TEXT NOT NULL,
            origin_id TEXT,
            message_id TEXT,
            message_type TEXT,
            stanza TEXT,
            archived_at BIGINT NOT NULL,
            retracted_at BIGINT
        );
        CREATE TABLE archive_entries (
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            id BIGINT NOT NULL,
            with_bare TEXT NOT NULL,
            has_origin_id BOOLEAN,
            PRIMARY KEY (account_id, id)
        );
        INSERT INTO archive_bodies
            (id, owners, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type, stanza, archived_at,
             retracted_at)
        OVERRIDING SYSTEM VALUE
        SELECT id, 1, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type, stanza, archived_at,
               retracted_at
        FROM archive_messages ORDER BY id;
        INSERT INTO archive_entries (account_id, id, with_bare, has_origin_id)
        SELECT account_id, id, with_bare, CASE WHEN origin_id IS NOT NULL THEN true END FROM archive_messages;
        SELECT setval(pg_get_serial_sequence('archive_bodies', 'id'), GREATEST(
            COALESCE(pg_sequence_last_value(pg_get_serial_sequence('archive_messages', 'id')::regclass), 0),
            (SELECT COALESCE(MAX(id), 0) FROM archive_messages)) + 1, false);
        DROP TABLE archive_messages;
        CREATE INDEX archive_bodies_stanza_id ON archive_bodies(stanza_id);
        CREATE INDEX archive_bodies_origin_id ON archive_bodies(origin_id) WHERE origin_id IS NOT NULL;
        CREATE INDEX archive_bodies_time ON archive_bodies(archived_at);
        CREATE INDEX archive_entries_with ON archive_entries(account_id, with_bare, id);
        CREATE INDEX archive_entries_origin_id ON archive_entries(account_id, id) WHERE has_origin_id;
        CREATE FUNCTION archive_entries_released() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            WITH counts AS (SELECT id, COUNT(*) AS n FROM released GROUP BY id),
            gone AS (DELETE FROM archive_bodies AS b USING counts AS c WHERE b.id = c.id AND b.owners <= c.n)
            UPDATE archive_bodies AS b SET owners = b.owners - c.n FROM counts AS c WHERE b.id = c.id AND b.owners > c.n;
            RETURN NULL;
        END
        $$;
        CREATE TRIGGER archive_entries_released AFTER DELETE ON archive_entries
            REFERENCING OLD TABLE AS released FOR EACH STATEMENT EXECUTE FUNCTION archive_entries_released()
        """
}
