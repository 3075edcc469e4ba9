"""Forward migrations of Splice's state schema. Append only: never edit a released entry.

Each entry is (version, SQL script); the schema version is the number of entries applied.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE IF NOT EXISTS splice_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS content_cache (
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (kind, key)
        )
        """,
    ),
    (
        # Build evidence (splice.plan.evidence): every relation version, the latest success
        # and the latest attempt per (target, node), and the upstream versions each build saw.
        2,
        """
        CREATE TABLE IF NOT EXISTS evidence_versions (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            target TEXT NOT NULL,
            node_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            reason TEXT NOT NULL,
            run_id TEXT,
            fingerprint TEXT NOT NULL,
            intervals TEXT,
            tool_state TEXT,
            row_count INTEGER,
            recorded_at REAL NOT NULL,
            UNIQUE (target, node_id, version)
        );
        CREATE INDEX IF NOT EXISTS evidence_versions_by_node
            ON evidence_versions (target, node_id, seq);
        CREATE TABLE IF NOT EXISTS evidence_builds (
            target TEXT NOT NULL,
            node_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            reason TEXT NOT NULL,
            run_id TEXT,
            fingerprint TEXT NOT NULL,
            intervals TEXT,
            tool_state TEXT,
            row_count INTEGER,
            built_at REAL NOT NULL,
            inputs_recorded INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (target, node_id)
        );
        CREATE TABLE IF NOT EXISTS evidence_inputs (
            target TEXT NOT NULL,
            node_id TEXT NOT NULL,
            upstream_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            PRIMARY KEY (target, node_id, upstream_id)
        );
        CREATE TABLE IF NOT EXISTS evidence_attempts (
            target TEXT NOT NULL,
            node_id TEXT NOT NULL,
            run_id TEXT,
            status TEXT NOT NULL,
            error TEXT,
            started_at REAL,
            finished_at REAL,
            PRIMARY KEY (target, node_id)
        )
        """,
    ),
    (
        # The run journal and the run lock (splice.run.journal, splice.run.locks): one row per
        # run, its events in order, and the holder of each run lock.
        3,
        """
        CREATE TABLE IF NOT EXISTS runs (
            run_id TEXT PRIMARY KEY,
            target TEXT NOT NULL,
            status TEXT NOT NULL,
            selector TEXT,
            exclude TEXT,
            started_at REAL NOT NULL,
            finished_at REAL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            command TEXT,
            summary TEXT
        );
        CREATE INDEX IF NOT EXISTS runs_by_target ON runs (target, started_at);
        CREATE TABLE IF NOT EXISTS run_events (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            ts REAL NOT NULL,
            kind TEXT NOT NULL,
            project TEXT,
            segment_id TEXT,
            node_id TEXT,
            status TEXT,
            duration REAL,
            rows INTEGER,
            data TEXT,
            PRIMARY KEY (run_id, seq)
        );
        CREATE INDEX IF NOT EXISTS run_events_by_node ON run_events (node_id, run_id);
        CREATE TABLE IF NOT EXISTS run_locks (
            name TEXT PRIMARY KEY,
            run_id TEXT,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            command TEXT,
            acquired_at REAL NOT NULL
        )
        """,
    ),
    (
        # splice watch (splice.watch.history): the metrics measured per target, their series
        # (metric x dimension values), one point per series and interval, the anomalies the
        # detectors found (grouped into incidents later), and one row per watch call.
        4,
        """
        CREATE TABLE IF NOT EXISTS watch_metrics (
            target TEXT NOT NULL,
            name TEXT NOT NULL,
            node_id TEXT NOT NULL,
            declared INTEGER NOT NULL,
            fingerprint TEXT NOT NULL,
            sql TEXT NOT NULL,
            grain TEXT NOT NULL,
            measured_through TEXT,
            judged_through TEXT,
            owner TEXT,
            domain TEXT,
            updated_at REAL NOT NULL,
            PRIMARY KEY (target, name)
        );
        CREATE TABLE IF NOT EXISTS watch_series (
            series_id INTEGER PRIMARY KEY AUTOINCREMENT,
            target TEXT NOT NULL,
            metric TEXT NOT NULL,
            spec TEXT NOT NULL,
            node_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            dims TEXT NOT NULL,
            created_at REAL NOT NULL,
            UNIQUE (target, metric, dims)
        );
        CREATE INDEX IF NOT EXISTS watch_series_by_spec ON watch_series (target, spec);
        CREATE TABLE IF NOT EXISTS watch_points (
            series_id INTEGER NOT NULL REFERENCES watch_series (series_id) ON DELETE CASCADE,
            interval_start TEXT NOT NULL,
            value REAL,
            measured_at REAL NOT NULL,
            watch_id TEXT NOT NULL,
            PRIMARY KEY (series_id, interval_start)
        );
        CREATE TABLE IF NOT EXISTS watch_anomalies (
            anomaly_id INTEGER PRIMARY KEY AUTOINCREMENT,
            series_id INTEGER NOT NULL REFERENCES watch_series (series_id) ON DELETE CASCADE,
            target TEXT NOT NULL,
            metric TEXT NOT NULL,
            node_id TEXT NOT NULL,
            dims TEXT NOT NULL,
            interval_start TEXT NOT NULL,
            detector TEXT NOT NULL,
            direction TEXT NOT NULL,
            value REAL,
            expected REAL,
            score REAL,
            reason TEXT NOT NULL,
            data TEXT,
            watch_id TEXT NOT NULL,
            detected_at REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'open',
            incident_id TEXT,
            UNIQUE (series_id, interval_start, detector)
        );
        CREATE INDEX IF NOT EXISTS watch_anomalies_by_interval
            ON watch_anomalies (target, interval_start);
        CREATE TABLE IF NOT EXISTS watch_runs (
            watch_id TEXT PRIMARY KEY,
            target TEXT NOT NULL,
            started_at REAL NOT NULL,
            finished_at REAL NOT NULL,
            backfill INTEGER NOT NULL,
            metrics INTEGER NOT NULL,
            points INTEGER NOT NULL,
            anomalies INTEGER NOT NULL,
            summary TEXT
        )
        """,
    ),
    (
        # Incidents (splice.watch.incidents): anomalies that share a cause, grouped; the
        # diagnosis (origin, cause, evidence, blast radius, scope) is kept as JSON, refreshed
        # while the incident is open.
        5,
        """
        CREATE TABLE IF NOT EXISTS incidents (
            incident_id TEXT PRIMARY KEY,
            target TEXT NOT NULL,
            status TEXT NOT NULL,
            title TEXT NOT NULL,
            origin_node TEXT,
            first_interval TEXT NOT NULL,
            last_interval TEXT NOT NULL,
            anomalies INTEGER NOT NULL,
            diagnosis TEXT,
            opened_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            resolved_at REAL,
            resolution TEXT
        );
        CREATE INDEX IF NOT EXISTS incidents_by_target ON incidents (target, status);
        CREATE INDEX IF NOT EXISTS watch_anomalies_by_incident ON watch_anomalies (incident_id)
        """,
    ),
    (
        # Repair behind approvals (splice.repair): proposals as JSON with their status, every
        # decision on them, the org-wide stop, and the hash-chained audit log.
        6,
        """
        CREATE TABLE IF NOT EXISTS repair_proposals (
            proposal_id TEXT PRIMARY KEY,
            incident_id TEXT,
            target TEXT NOT NULL,
            domain TEXT NOT NULL,
            status TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX IF NOT EXISTS repair_proposals_by_status
            ON repair_proposals (target, status);
        CREATE TABLE IF NOT EXISTS repair_decisions (
            proposal_id TEXT NOT NULL REFERENCES repair_proposals (proposal_id),
            decision TEXT NOT NULL,
            actor TEXT NOT NULL,
            comment TEXT,
            at REAL NOT NULL
        );
        CREATE INDEX IF NOT EXISTS repair_decisions_by_proposal
            ON repair_decisions (proposal_id, at);
        CREATE TABLE IF NOT EXISTS repair_policy (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS repair_audit_log (
            seq INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            kind TEXT NOT NULL,
            actor TEXT NOT NULL,
            proposal_id TEXT,
            payload TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        )
        """,
    ),
    (
        # Notifications (splice.notify): the cursor of what was already turned into events (the
        # last audit-log seq and incidents rowid; a state upgraded to this version starts at
        # its present, so its history is not sent), and one delivery per (event, channel).
        7,
        """
        CREATE TABLE IF NOT EXISTS notify_cursor (name TEXT PRIMARY KEY, position INTEGER NOT NULL);
        INSERT OR IGNORE INTO notify_cursor (name, position)
            SELECT 'audit', COALESCE(MAX(seq), 0) FROM repair_audit_log;
        INSERT OR IGNORE INTO notify_cursor (name, position)
            SELECT 'incidents', COALESCE(MAX(rowid), 0) FROM incidents;
        CREATE TABLE IF NOT EXISTS notify_deliveries (
            delivery_id INTEGER PRIMARY KEY AUTOINCREMENT,
            event_key TEXT NOT NULL,
            event TEXT NOT NULL,
            channel TEXT NOT NULL,
            message TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            created_at REAL NOT NULL,
            next_attempt_at REAL NOT NULL,
            claimed_until REAL,
            delivered_at REAL,
            UNIQUE (event_key, channel)
        );
        CREATE INDEX IF NOT EXISTS notify_deliveries_due
            ON notify_deliveries (status, next_attempt_at)
        """,
    ),
    (
        # Principals (splice.support.principals): who decided, as what (person or agent) and how they
        # were authenticated, on every decision and proposal; API keys, stored as a salted hash
        # only (splice.auth.keys). Decisions from before principals were names given with --as:
        # they are marked cli-as (Splice's own as its system principal), their kind unknown.
        8,
        """
        ALTER TABLE repair_decisions ADD COLUMN principal_kind TEXT;
        ALTER TABLE repair_decisions ADD COLUMN principal_auth TEXT;
        ALTER TABLE repair_decisions ADD COLUMN principal_credential TEXT;
        UPDATE repair_decisions SET principal_kind = 'agent', principal_auth = 'system'
            WHERE actor IN ('splice', 'splice-autonomy');
        UPDATE repair_decisions SET principal_auth = 'cli-as' WHERE principal_auth IS NULL;
        ALTER TABLE repair_proposals ADD COLUMN requester_kind TEXT;
        ALTER TABLE repair_proposals ADD COLUMN requester_auth TEXT;
        ALTER TABLE repair_proposals ADD COLUMN requester_credential TEXT;
        UPDATE repair_proposals SET requester_auth = 'cli-as';
        CREATE TABLE IF NOT EXISTS api_keys (
            key_id TEXT PRIMARY KEY,
            principal TEXT NOT NULL,
            kind TEXT NOT NULL,
            scopes TEXT NOT NULL,
            secret_hash TEXT NOT NULL,
            created_at REAL NOT NULL,
            created_by TEXT NOT NULL,
            last_used_at REAL,
            revoked_at REAL,
            revoked_by TEXT
        )
        """,
    ),
    (
        # Accepted levels (splice.watch.levels): a series whose level moved and stayed is judged
        # against its old level (its incident stays open and grows) until a person, or a
        # verified repair, accepts the new level; from ``since`` on the series is judged against
        # itself. One row per (series, acceptance), with who decided and how they were
        # authenticated.
        9,
        """
        CREATE TABLE IF NOT EXISTS watch_levels (
            level_id INTEGER PRIMARY KEY AUTOINCREMENT,
            target TEXT NOT NULL,
            series_id INTEGER NOT NULL,
            since TEXT NOT NULL,
            incident_id TEXT,
            how TEXT NOT NULL,
            accepted_by TEXT NOT NULL,
            principal_kind TEXT,
            principal_auth TEXT,
            principal_credential TEXT,
            note TEXT,
            accepted_at REAL NOT NULL
        );
        CREATE INDEX IF NOT EXISTS watch_levels_by_series ON watch_levels (series_id, since)
        """,
    ),
    (
        # Access grants (splice.grants): a request for read access to the relations some nodes
        # write, approved like a repair, granted on the warehouse and revoked when its time is
        # up. A grant still held (granting, granted) past ``until`` is a pending revoke: state,
        # not memory, so a crash never leaves access behind. Decisions as for repairs.
        10,
        """
        CREATE TABLE IF NOT EXISTS access_grants (
            grant_id TEXT PRIMARY KEY,
            target TEXT NOT NULL,
            domain TEXT NOT NULL,
            status TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            until REAL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX IF NOT EXISTS access_grants_by_status ON access_grants (target, status);
        CREATE TABLE IF NOT EXISTS access_decisions (
            grant_id TEXT NOT NULL REFERENCES access_grants (grant_id),
            decision TEXT NOT NULL,
            actor TEXT NOT NULL,
            comment TEXT,
            at REAL NOT NULL,
            principal_kind TEXT,
            principal_auth TEXT,
            principal_credential TEXT
        );
        CREATE INDEX IF NOT EXISTS access_decisions_by_grant ON access_decisions (grant_id, at)
        """,
    ),
    (
        # Warehouse migrations (splice.migrate): the waves, their approvals and their parity
        # checks, as one JSON document per migration; every step is also in the audit log.
        11,
        """
        CREATE TABLE IF NOT EXISTS migrations (
            migration_id TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            dest TEXT NOT NULL,
            status TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )
        """,
    ),
    (
        # Every domain a repair touches decides (splice.repair.approvals): an approval names
        # the domains it is for, an escalation the domain whose owner it asks (a JSON list).
        12,
        """
        ALTER TABLE repair_decisions ADD COLUMN domains TEXT
        """,
    ),
    (
        # Signed audit-log entries (splice.state.signing): the writing process's Ed25519 key
        # (``ed25519:`` + its public key) and its signature of the entry's hash.
        13,
        """
        ALTER TABLE repair_audit_log ADD COLUMN signer TEXT;
        ALTER TABLE repair_audit_log ADD COLUMN signature TEXT
        """,
    ),
    (
        # The operator (splice.operator): each schedule's last tick and outcome, the watches
        # waiting to be coalesced, the cursors of what it has seen (orchestrator runs, the
        # journal, OpenLineage events), and what it did and why.
        14,
        """
        CREATE TABLE IF NOT EXISTS operator_schedules (
            name TEXT NOT NULL,
            target TEXT NOT NULL,
            last_tick REAL,
            started_at REAL,
            finished_at REAL,
            outcome TEXT,
            detail TEXT,
            PRIMARY KEY (name, target)
        );
        CREATE TABLE IF NOT EXISTS operator_triggers (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            target TEXT NOT NULL,
            source TEXT NOT NULL,
            at REAL NOT NULL,
            detail TEXT NOT NULL,
            taken_at REAL,
            watch_seq INTEGER
        );
        CREATE INDEX IF NOT EXISTS operator_triggers_pending ON operator_triggers (target, taken_at);
        CREATE TABLE IF NOT EXISTS operator_cursors (name TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS operator_activity (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            target TEXT NOT NULL,
            kind TEXT NOT NULL,
            summary TEXT NOT NULL,
            detail TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS operator_activity_by_target ON operator_activity (target, seq)
        """,
    ),
    (
        # Each daily series' recent history in one row (splice.watch.windows): the window the
        # next watch judges against, so a next-day watch reads one row per series instead of
        # every point of its training window. Derived from watch_points, written beside them.
        15,
        """
        CREATE TABLE IF NOT EXISTS watch_windows (
            series_id INTEGER PRIMARY KEY REFERENCES watch_series (series_id) ON DELETE CASCADE,
            first_day INTEGER NOT NULL,
            vals BLOB NOT NULL,
            updated_at REAL NOT NULL
        )
        """,
    ),
]
