package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// channel is the NOTIFY channel of every Put and Delete. A notification's
// payload is "<writer's instance id> <rev> <key>", rev 0 for a Delete.
const channel = "toolsift_store"

// migrations[v] takes the schema from version v-1 to v; a database's
// version is the row of toolsift_store_schema. Append, never edit: a
// replica of an older toolsift refuses a newer schema.
//
// Version 1: the table of values, its key compared bytewise (COLLATE "C",
// so that List's range scan and its order are Go's string order), and a
// sequence numbering every write (rev), which Watch compares to learn
// what changed while its connection was down.
//
// Version 2: the shared rate limits (TakeToken), one row a bucket: the
// SHA-256 of its name, its theoretical arrival time (GCRA), past which
// the bucket is full and the row dead (sweep deletes it), and whether its
// last take took a token.
var migrations = [][]string{
	1: {
		`CREATE SEQUENCE toolsift_store_rev`,
		`CREATE TABLE toolsift_store (
	key text COLLATE "C" PRIMARY KEY,
	value bytea NOT NULL,
	rev bigint NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
)`,
	},
	2: {
		`CREATE TABLE toolsift_rate_limit (
	key bytea PRIMARY KEY,
	tat timestamptz NOT NULL,
	took boolean NOT NULL
)`,
	},
}

// schemaVersion is the version of the schema this package writes.
const schemaVersion = 2

// migrateLock is the advisory lock (the two-int form, a key space of its
// own apart from Lock's 64-bit keys) that serialises migrations of
// replicas starting at once: "tool", 1.
const migrateLockClass, migrateLockObj = 0x746f6f6c, 1

// migrate creates the schema or brings it to schemaVersion, in one
// transaction under an advisory lock, so that two replicas starting at
// once migrate once: the second waits, then finds the schema current.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, migrateLockClass, migrateLockObj); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	// CREATE TABLE IF NOT EXISTS needs CREATE on the schema even when the
	// table is there: a role granted only the use of the tables would be
	// refused at every start.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('toolsift_store_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if !exists {
		if _, err := tx.Exec(ctx, `CREATE TABLE toolsift_store_schema (version integer NOT NULL)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	var version int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM toolsift_store_schema`).Scan(&version); err != nil {
		return fmt.Errorf("migrate: read the schema version: %w", err)
	}
	if version > schemaVersion {
		return fmt.Errorf("the database's toolsift_store schema is version %d, newer than this toolsift's %d: upgrade toolsift", version, schemaVersion)
	}
	if version == schemaVersion {
		return tx.Commit(ctx)
	}
	for v := version + 1; v <= schemaVersion; v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", v, err)
			}
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM toolsift_store_schema`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO toolsift_store_schema (version) VALUES ($1)`, schemaVersion); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
