#!/usr/bin/env bash
# What one archived message costs PostgreSQL in each row format, without parleyd: on a
# throwaway PostgreSQL cluster (fsync on, in /var/tmp), BATCHES batches of 2,000 messages
# between 50 pairs (a 300-byte stanza, random stanza-ids, each batch one transaction) are
# written (1) as two full rows per message (`archive_messages`, PostgreSQL migrations v3-v10,
# seven indexes) and (2) as one body and two narrow entries (`archive_bodies` +
# `archive_entries`, v11_archive_bodies), alternately, ROUNDS times. Prints per message the
# backend's CPU (utime + stime from /proc, sampled every 50 ms) and the WAL written.
# DROP="archive_bodies_time ..." drops those indexes first, to price each one.
set -euo pipefail
cd "$(dirname "$0")/.."
BATCHES=${BATCHES:-10}
ROUNDS=${ROUNDS:-2}
. bench/lib.sh
bench_tmp parley-archive-rows "${BENCH_TMP_PARENT:-/var/tmp}"
postgres_start
psql() { command psql -q -X -h 127.0.0.1 -p "$postgres_port" -U parley -d parley "$@"; }
psql <<'SQL'
CREATE TABLE accounts (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, username TEXT COLLATE "C" NOT NULL UNIQUE);
INSERT INTO accounts (username) SELECT 'user' || g FROM generate_series(1, 100) g;
CREATE TABLE archive_messages (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    with_bare TEXT NOT NULL, from_bare TEXT NOT NULL, from_jid TEXT NOT NULL, to_jid TEXT NOT NULL,
    stanza_id TEXT NOT NULL, origin_id TEXT, message_id TEXT, message_type TEXT, stanza TEXT,
    archived_at BIGINT NOT NULL, retracted_at BIGINT);
CREATE INDEX archive_messages_account ON archive_messages(account_id, id);
CREATE INDEX archive_messages_with ON archive_messages(account_id, with_bare, id);
CREATE INDEX archive_messages_time ON archive_messages(account_id, archived_at);
CREATE INDEX archive_messages_stanza_id ON archive_messages(account_id, stanza_id);
CREATE INDEX archive_messages_origin_id ON archive_messages(account_id, origin_id) WHERE origin_id IS NOT NULL;
CREATE INDEX archive_messages_sent ON archive_messages(account_id, from_bare, id) WHERE origin_id IS NOT NULL;
CREATE TABLE archive_bodies (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, owners INTEGER NOT NULL,
    from_bare TEXT NOT NULL, from_jid TEXT NOT NULL, to_jid TEXT NOT NULL, stanza_id TEXT NOT NULL,
    origin_id TEXT, message_id TEXT, message_type TEXT, stanza TEXT, archived_at BIGINT NOT NULL, retracted_at BIGINT);
CREATE TABLE archive_entries (
    account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE, id BIGINT NOT NULL,
    with_bare TEXT NOT NULL, has_origin_id BOOLEAN, PRIMARY KEY (account_id, id));
CREATE INDEX archive_bodies_stanza_id ON archive_bodies(stanza_id);
CREATE INDEX archive_bodies_origin_id ON archive_bodies(origin_id) WHERE origin_id IS NOT NULL;
CREATE INDEX archive_bodies_time ON archive_bodies(archived_at);
CREATE INDEX archive_entries_with ON archive_entries(account_id, with_bare, id);
CREATE INDEX archive_entries_origin_id ON archive_entries(account_id, id) WHERE has_origin_id;
CREATE TABLE staging AS SELECT g AS n, 1 + (g % 50) * 2 AS a, 2 + (g % 50) * 2 AS b,
    'user' || (1 + (g % 50) * 2) || '@localhost' AS abare, 'user' || (2 + (g % 50) * 2) || '@localhost' AS bbare,
    md5(random()::text) AS sid, 'm' || g AS mid,
    '<message xmlns=''jabber:client'' from=''user1@localhost/bench'' to=''user2@localhost/bench'' type=''chat'' id=''m' || g
        || '''><body>' || g || ' 123456789012345 ' || repeat('x', 160) || '</body></message>' AS stanza
    FROM generate_series(1, 2000) g;
SQL
for index in ${DROP:-}; do psql -c "DROP INDEX $index"; done

two_rows='
INSERT INTO archive_messages (account_id, with_bare, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type, stanza, archived_at)
SELECT owner, with_bare, abare, abare || '"'"'/bench'"'"', bbare || '"'"'/bench'"'"', md5(sid || :batch), NULL, mid, '"'"'chat'"'"', stanza,
       1700000000000 + :batch::bigint * 10000 + n
FROM (SELECT n, 0 AS k, a AS owner, bbare AS with_bare, abare, bbare, sid, mid, stanza FROM staging
      UNION ALL SELECT n, 1, b, abare, abare, bbare, sid, mid, stanza FROM staging) AS s ORDER BY n, k;'
shared_body='
WITH body AS (
    INSERT INTO archive_bodies (owners, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type, stanza, archived_at)
    SELECT 2, abare, abare || '"'"'/bench'"'"', bbare || '"'"'/bench'"'"', md5(sid || :batch), NULL, mid, '"'"'chat'"'"', stanza,
           1700000000000 + :batch::bigint * 10000 + n
    FROM staging ORDER BY n RETURNING id),
numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM body)
INSERT INTO archive_entries (account_id, id, with_bare, has_origin_id)
SELECT owner, numbered.id, with_bare, NULL FROM numbered JOIN (
    SELECT n, a AS owner, bbare AS with_bare FROM staging UNION ALL SELECT n, b, abare FROM staging) AS e ON e.n = numbered.n;'

batch=0
measure() { # name sql
    local script=$tmp/$1.sql lsn0 lsn1 ticks=0 client backend stat
    : > "$script"
    for _ in $(seq "$BATCHES"); do
        batch=$((batch + 1))
        printf '\\set batch %d\nBEGIN;\n%s\nCOMMIT;\n' "$batch" "$2" >> "$script"
    done
    echo "SELECT pg_sleep(0.3);" >> "$script"
    lsn0=$(psql -tAc "SELECT pg_current_wal_lsn()")
    PGAPPNAME=rows-$1 psql -f "$script" > /dev/null &
    client=$!
    sleep 0.2
    backend=$(psql -tAc "SELECT pid FROM pg_stat_activity WHERE application_name = 'rows-$1'")
    while kill -0 "$client" 2>/dev/null; do
        read -r -a stat < "/proc/$backend/stat" 2>/dev/null && ticks=$((stat[13] + stat[14]))
        sleep 0.05
    done
    lsn1=$(psql -tAc "SELECT pg_current_wal_lsn()")
    awk -v name="$1" -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v m=$((BATCHES * 2000)) \
        -v w="$(psql -tAc "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")" \
        'BEGIN { printf "%-12s %6d messages: backend CPU %5.1f us/msg, WAL %5.0f B/msg\n", name, m, t / hz * 1e6 / m, w / m }'
}
for _ in $(seq "$ROUNDS"); do
    measure two-rows "$two_rows"
    measure shared-body "$shared_body"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
