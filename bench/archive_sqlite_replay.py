#!/usr/bin/env python3
# Replays, with Python's sqlite3 (the same libsqlite3 as parleyd), the statements parleyd's
# archive writer sends for N messages between 100 pairs of accounts: per transaction an
# account look-up and the two preference queries per account touched, two INSERTs per message
# (one row per party), and every 32nd transaction the trim to 10,000 rows per account; WAL
# mode, synchronous=FULL, a file under /var/tmp (a real disk). Prints SQLite's CPU, the bytes
# written and the read/write system calls per message (bench/README.md, issue 17).
#
# Usage: [B=<messages per commit>] bench/archive_sqlite_replay.py shipped|lean|v17 <messages>
#   shipped: the indexes of migrations v3-v5 and SQLite's default cache;
#   lean:    after v16_archive_batch, with the writer's 32 MiB cache, random (v4) stanza-ids;
#   v17:     after v17_archive_rows: no time index (archived_at follows the row order),
#            time-ordered stanza-ids, the look-ups as prepared statements (one parse each);
#   v20:     after v20_perf_archive: one shared row per message (archive_bodies, the stanza
#            stored once, without the owner's stanza-id) and one narrow row per owner
#            (archive_entries, WITHOUT ROWID), the trim through the entries.
import sqlite3, time, uuid, os, sys
mode = sys.argv[1]; N = int(sys.argv[2])
path = "/var/tmp/archive-replay-%d.sqlite" % os.getpid()
for p in (path, path+"-wal", path+"-shm"):
    try: os.remove(p)
    except FileNotFoundError: pass
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=FULL"); db.execute("PRAGMA foreign_keys=ON")
if os.environ.get("CKPT"): db.execute("PRAGMA wal_autocheckpoint=%d" % int(os.environ["CKPT"]))
if mode in ("lean", "lean32", "v17", "v20"): db.execute("PRAGMA cache_size=-32768")
db.executescript("""
CREATE TABLE accounts (id INTEGER PRIMARY KEY AUTOINCREMENT, username TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL);
CREATE TABLE archive_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    with_bare TEXT NOT NULL, from_bare TEXT NOT NULL, from_jid TEXT NOT NULL, to_jid TEXT NOT NULL,
    stanza_id TEXT NOT NULL, origin_id TEXT, stanza TEXT, archived_at INTEGER NOT NULL, retracted_at INTEGER,
    message_id TEXT, message_type TEXT);
CREATE INDEX archive_messages_account ON archive_messages(account_id, id);
CREATE INDEX archive_messages_with ON archive_messages(account_id, with_bare, id);
CREATE INDEX archive_messages_stanza_id ON archive_messages(account_id, stanza_id);
CREATE INDEX archive_messages_sent ON archive_messages(account_id, from_bare, id) WHERE origin_id IS NOT NULL;
CREATE TABLE archive_preferences (account_id INTEGER PRIMARY KEY, default_mode TEXT NOT NULL);
CREATE TABLE archive_preference_jids (account_id INTEGER NOT NULL, jid TEXT NOT NULL, archive INTEGER NOT NULL, PRIMARY KEY (account_id, jid)) WITHOUT ROWID;
""")
if mode == "v20":
    db.executescript("""
CREATE TABLE archive_bodies (
    id INTEGER PRIMARY KEY AUTOINCREMENT, owners INTEGER NOT NULL, from_bare TEXT NOT NULL, from_jid TEXT NOT NULL,
    to_jid TEXT NOT NULL, stanza_id TEXT NOT NULL, origin_id TEXT, message_id TEXT, message_type TEXT, stanza TEXT,
    archived_at INTEGER NOT NULL, retracted_at INTEGER);
CREATE INDEX archive_bodies_stanza_id ON archive_bodies(stanza_id);
CREATE INDEX archive_bodies_origin_id ON archive_bodies(origin_id) WHERE origin_id IS NOT NULL;
CREATE TABLE archive_entries (
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE, id INTEGER NOT NULL, with_bare TEXT NOT NULL,
    sent INTEGER, PRIMARY KEY (account_id, id)) WITHOUT ROWID;
CREATE INDEX archive_entries_with ON archive_entries(account_id, with_bare, id);
CREATE INDEX archive_entries_sent ON archive_entries(account_id, id) WHERE sent IS NOT NULL;
CREATE TRIGGER archive_entries_gone AFTER DELETE ON archive_entries BEGIN
    UPDATE archive_bodies SET owners = owners - 1 WHERE id = OLD.id;
    DELETE FROM archive_bodies WHERE id = OLD.id AND owners <= 0;
END;""")
if mode not in ("v17", "v20"):
    db.execute("CREATE INDEX archive_messages_time ON archive_messages(account_id, archived_at)")
if mode == "shipped":
    db.executescript("""CREATE INDEX archive_messages_origin_id ON archive_messages(account_id, origin_id);
CREATE INDEX archive_messages_age ON archive_messages(archived_at);""")
else:
    db.executescript("CREATE INDEX archive_messages_origin_id ON archive_messages(account_id, origin_id) WHERE origin_id IS NOT NULL;")
for i in range(1, 201): db.execute("INSERT INTO accounts (username, created_at) VALUES (?, 'x')", (f"user{i}",))
stanza = "<message xmlns='jabber:client' to='user2@localhost/bench' type='chat' id='m123' from='user1@localhost/bench'><body>123 123456789012 " + "x"*70 + "</body><stanza-id xmlns='urn:xmpp:sid:0' id='%s' by='user1@localhost'/></message>"
def v7(i):
    # 48 bits of milliseconds, then random bits: ids made in order sort in order.
    r = uuid.uuid4().int
    value = ((1700000000000 + i) << 80) | (0x7 << 76) | (r & ((1 << 76) - 1))
    return str(uuid.UUID(int=value))
ids = [v7(i) if mode in ("v17", "v20") else str(uuid.uuid4()) for i in range(N)]
B = int(os.environ.get("B", "512")); n = 0; batches = 0; statements = 0
cpu = 0.0; wall = 0.0
while n < N:
    rows = []
    for k in range(B):
        a = (n + k) % 100 * 2 + 1
        sid = ids[(n + k) % N]
        for owner, other in ((a, a+1), (a+1, a)):
            rows.append((f"user{owner}", owner, f"user{other}@localhost", f"user{a}@localhost", f"user{a}@localhost/bench", f"user{a+1}@localhost/bench", sid, None, stanza % sid, 1700000000000 + n + k, "m1", "chat"))
    t0 = time.process_time(); w0 = time.time()
    db.execute("BEGIN IMMEDIATE")
    seen = {}
    for r in rows:
        if r[0] not in seen:
            db.execute("SELECT id FROM accounts WHERE username = ?", (r[0],)).fetchone()
            db.execute("SELECT default_mode FROM archive_preferences WHERE account_id = ?", (r[1],)).fetchone()
            db.execute("SELECT jid, archive FROM archive_preference_jids WHERE account_id = ? ORDER BY jid", (r[1],)).fetchall()
            seen[r[0]] = 1; statements += 3
    if mode == "v20":
        for i in range(0, len(rows), 2):
            r = rows[i]
            body = db.execute("INSERT INTO archive_bodies (owners, from_bare, from_jid, to_jid, stanza_id, origin_id, stanza, archived_at, message_id, message_type) VALUES (2,?,?,?,?,?,?,?,?,?)", (r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11])).lastrowid
            for e in (rows[i], rows[i + 1]):
                db.execute("INSERT INTO archive_entries (account_id, id, with_bare, sent) VALUES (?,?,?,?)", (e[1], body, e[2], None))
        statements += len(rows) // 2 * 3
    else: db.executemany("INSERT INTO archive_messages (account_id, with_bare, from_bare, from_jid, to_jid, stanza_id, origin_id, stanza, archived_at, message_id, message_type) VALUES (?,?,?,?,?,?,?,?,?,?,?)", [r[1:] for r in rows])
    statements += len(rows)
    batches += 1
    if batches % 32 == 1:
        for acc in range(1, 201):
            table = "archive_entries" if mode == "v20" else "archive_messages"
            db.execute(f"DELETE FROM {table} WHERE account_id = ? AND id <= (SELECT id FROM {table} WHERE account_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)", (acc, acc, 10000))
        statements += 200
    db.execute("COMMIT")
    cpu += time.process_time() - t0; wall += time.time() - w0
    n += B
io = dict(l.split(": ") for l in open("/proc/self/io").read().strip().split("\n"))
print(f"{mode:8} {N} msgs, {batches} transactions, {statements/N:.2f} statements/msg: SQLite CPU {1e6*cpu/N:.1f} us/msg, wall {1e6*wall/N:.1f} us/msg, written {int(io['write_bytes'])/N/1024:.1f} KiB/msg, syscalls w {int(io['syscw'])/N:.1f} r {int(io['syscr'])/N:.1f} /msg")
for p in (path, path + "-wal", path + "-shm"):
    try: os.remove(p)
    except FileNotFoundError: pass
