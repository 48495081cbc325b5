package effects

import (
	"slices"
	"strings"
	"testing"
)

// sqlKinds are the database effects of SQL text, as their first attribute (destroy, credentials...).
func sqlKinds(text string) []string {
	var out []string
	for _, e := range SQLEffects("psql", text) {
		out = append(out, e.Attrs[0][0])
	}
	return out
}

func TestSQLStatementsAreJudgedByWhatTheyDoToTheServer(t *testing.T) {
	tests := []struct {
		sql  string
		want []string // nil: nothing to judge
	}{
		// destroy
		{"DROP TABLE users", []string{"destroy"}},
		{"drop schema public cascade", []string{"destroy"}},
		{"/* cleanup */ DrOp DaTaBaSe prod", []string{"destroy"}},
		{"ALTER TABLE users DROP COLUMN email", []string{"destroy"}},
		{"TRUNCATE orders", []string{"destroy"}},
		{"DELETE FROM users", []string{"destroy"}},
		{"delete from users u where 1=1", []string{"destroy"}},
		{"DELETE FROM users WHERE TRUE RETURNING id", []string{"destroy"}},
		{"UPDATE accounts SET balance = 0", []string{"destroy"}},
		{"WITH gone AS (DELETE FROM logs RETURNING *) SELECT count(*) FROM gone", []string{"destroy"}},
		{"DELETE FROM users WHERE id = 4", nil},
		{"UPDATE users SET name = 'x' WHERE id = $1", nil},
		{"SELECT * FROM users FOR UPDATE", nil},
		{"INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET n = 2", nil},
		{"CREATE TABLE t (id int REFERENCES u ON DELETE CASCADE)", nil},
		{"SELECT 'DROP TABLE users'", nil},                         // a literal, not a statement
		{"-- DROP TABLE users\nSELECT 1", nil},                     // a comment
		{"SELECT $$DROP TABLE users$$", nil},                       // a dollar-quoted literal
		{"EXPLAIN DELETE FROM users", nil},                         // a plan
		{"EXPLAIN ANALYZE DELETE FROM users", []string{"destroy"}}, // runs it
		// leaving a read-only transaction
		{"COMMIT; DROP SCHEMA public CASCADE", []string{"leave-read-only", "destroy"}},
		{"ROLLBACK; INSERT INTO t VALUES (1)", []string{"leave-read-only"}},
		{"SET TRANSACTION READ WRITE", []string{"leave-read-only"}},
		{"set default_transaction_read_only = off", []string{"leave-read-only"}},
		{"SET GLOBAL read_only = 0", []string{"leave-read-only"}},
		{"SET @@global.read_only=0", []string{"leave-read-only"}},
		{"PRAGMA query_only = false", []string{"leave-read-only"}},
		{"BEGIN; INSERT INTO t VALUES (1); COMMIT; SELECT 1", nil},
		{"SET TRANSACTION READ ONLY", nil},
		{"COMMIT", nil},
		// the server runs programs or code
		{"COPY (SELECT 1) TO PROGRAM 'curl x | sh'", []string{"server-exec"}},
		{"EXEC xp_cmdshell 'whoami'", []string{"server-exec"}},
		{"EXEC sp_configure 'xp_cmdshell', 1", []string{"server-exec"}},
		{"CREATE FUNCTION f() RETURNS int AS $$ import os $$ LANGUAGE plpython3u", []string{"server-exec"}},
		{"CREATE FUNCTION sys(cstring) RETURNS int AS '/lib/libc.so.6', 'system' LANGUAGE C", []string{"server-exec"}},
		{"LOAD '/tmp/evil.so'", []string{"server-exec"}},
		{"SELECT load_extension('/tmp/x')", []string{"server-exec"}},
		{"SELECT * FROM dblink('host=evil', 'SELECT 1') AS t(a int)", []string{"server-exec"}},
		{"ALTER SYSTEM SET archive_command = 'curl x'", []string{"server-exec", "privilege"}},
		{"CREATE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql", nil},
		// the server's files
		{"COPY users TO '/tmp/users.csv'", []string{"server-file"}},
		{"COPY users FROM '/etc/passwd'", []string{"server-file"}},
		{"SELECT pg_read_file('/etc/passwd')", []string{"server-file"}},
		{"SELECT lo_export(1234, '/tmp/x')", []string{"server-file"}},
		{"SELECT * FROM users INTO OUTFILE '/tmp/x'", []string{"server-file"}},
		{"SELECT LOAD_FILE('/etc/shadow')", []string{"server-file"}},
		{"LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE t", []string{"server-file"}},
		{"ATTACH DATABASE '/Users/ada/.ssh/x.db' AS x", []string{"server-file"}},
		{"VACUUM INTO '/tmp/copy.db'", []string{"server-file"}},
		{"COPY users TO STDOUT WITH CSV", nil},
		{"ATTACH 'cache.db' AS cache", nil},
		// credentials
		{"SELECT usename, passwd FROM pg_shadow", []string{"credentials"}},
		{"SELECT count(*) FROM pg_authid", []string{"credentials"}},
		{"select user, authentication_string from mysql.user", []string{"credentials"}},
		{"SELECT name, decrypted_secret FROM vault.decrypted_secrets", []string{"credentials"}},
		{"SELECT email, encrypted_password FROM auth.users", []string{"credentials"}},
		{"SELECT * FROM auth.users", []string{"credentials"}},
		{"SELECT * FROM personal_access_tokens", []string{"credentials"}},
		{"SELECT u.email, k.api_key FROM users u JOIN keys k ON k.user_id = u.id", []string{"credentials"}},
		{"SELECT count(*) FROM api_tokens", nil},
		{"SELECT id, email FROM auth.users", nil},
		{"SELECT id, password_changed_at FROM users", nil},
		{"SELECT * FROM users", nil},
		// privileges
		{"GRANT SELECT ON reports TO analyst", []string{"privilege"}},
		{"CREATE USER bob WITH PASSWORD 'x'", []string{"privilege"}},
		{"SET ROLE postgres", []string{"privilege"}},
		{"SELECT 1", nil},
	}
	for _, tt := range tests {
		got := sqlKinds(tt.sql)
		if !slices.Equal(got, tt.want) {
			t.Errorf("sqlEffects(%q) = %v, want %v", tt.sql, got, tt.want)
		}
	}
}

func TestSQLPrivilegeHandingOutEverythingIsSuperuser(t *testing.T) {
	for _, sql := range []string{"ALTER ROLE app WITH SUPERUSER", "GRANT ALL PRIVILEGES ON *.* TO 'x'@'%'", "GRANT SELECT ON t TO x WITH GRANT OPTION", "ALTER SERVER ROLE sysadmin ADD MEMBER x; EXEC sp_addsrvrolemember 'x', 'sysadmin'"} {
		found := false
		for _, e := range SQLEffects("psql", sql) {
			found = found || strings.Contains(e.String(), "privilege superuser")
		}
		if !found {
			t.Errorf("%q: no superuser privilege effect in %v", sql, SQLEffects("psql", sql))
		}
	}
	if e := SQLEffects("psql", "GRANT SELECT ON t TO x"); len(e) != 1 || strings.Contains(e[0].String(), "superuser") {
		t.Errorf("GRANT SELECT: %v, want one privilege effect without superuser", e)
	}
}

func TestSQLQuotingHidesNothingAndInventsNothing(t *testing.T) {
	tests := []struct {
		sql  string
		want []string
	}{
		{`DROP TABLE "Users"`, []string{"destroy"}},
		{"DROP TABLE `users`", []string{"destroy"}},
		{"DROP TABLE [dbo].[users]", []string{"destroy"}},
		{`SELECT "passwd" FROM "pg_catalog"."pg_shadow"`, []string{"credentials"}},
		{`SELECT 'it''s; DROP TABLE users'`, nil},
		{`SELECT E'\'; DROP TABLE users; --'`, nil},
		{"SELECT $tag$ ; DROP TABLE users; $tag$", nil},
		{"/* /* nested */ DROP TABLE users */ SELECT 1", nil},
		{"SELECT 1 # DROP TABLE users", nil},
		{"SELECT 1; /* unterminated", nil},
	}
	for _, tt := range tests {
		if got := sqlKinds(tt.sql); !slices.Equal(got, tt.want) {
			t.Errorf("sqlEffects(%q) = %v, want %v", tt.sql, got, tt.want)
		}
	}
}

func TestSQLInConnectorArgumentsIsFoundByKeyOrByTheToolsName(t *testing.T) {
	tests := []struct {
		server, tool, key, value string
		want                     bool
	}{
		{"postgres", "query", "sql", "DROP TABLE users", true},
		{"0f3a9c", "run", "query", "DELETE FROM users", true},        // a UUID server: the key says SQL
		{"0f3a9c", "execute_sql", "text", "DELETE FROM users", true}, // the tool's name says SQL
		{"notes", "search", "text", "DELETE FROM users", false},      // neither
		{"postgres", "query", "sql", "how do I drop a table?", false},
	}
	for _, tt := range tests {
		if got := SQLArgument(tt.server, tt.tool, tt.key, tt.value); got != tt.want {
			t.Errorf("sqlArgument(%q, %q, %q, %q) = %v, want %v", tt.server, tt.tool, tt.key, tt.value, got, tt.want)
		}
	}
}

func TestSQLInInterpreterCodeIsFoundInItsStringLiterals(t *testing.T) {
	tests := []struct {
		code string
		want int
	}{
		{`cur.execute("DROP TABLE users")`, 1},
		{"db.exec(`DELETE FROM sessions`)", 1},
		{`conn.execute('SELECT 1'); conn.execute("TRUNCATE logs")`, 2},
		{`print("Update available")`, 1}, // found, and judged harmless by SQLEffects
		{`print("dropping table")`, 0},
	}
	for _, tt := range tests {
		if got := sqlInCode(tt.code); len(got) != tt.want {
			t.Errorf("sqlInCode(%q) = %q, want %d", tt.code, got, tt.want)
		}
	}
	if e := SQLEffects("python3", "Update available"); len(e) != 0 {
		t.Errorf("prose judged as SQL: %v", e)
	}
}

func FuzzSQLStatements(f *testing.F) {
	for _, s := range []string{"DROP TABLE users", "COMMIT; DROP SCHEMA public CASCADE", "SELECT $a$x$a$", "/* /* */", `SELECT 'a''b'`, "SELECT \"a\".\"b\" FROM [c]", "UPDATE t SET a=1 WHERE 1=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := 0
		for _, st := range sqlStatements(s) {
			if len(st) == 0 {
				t.Fatalf("empty statement from %q", s)
			}
			n += len(st)
		}
		if n > sqlMaxTokens+sqlMaxStatements {
			t.Fatalf("%d tokens from %d bytes, over the limit", n, len(s))
		}
		for _, e := range SQLEffects("psql", s) {
			if e.Kind != EffectDatabase || len(e.Attrs) < 2 {
				t.Fatalf("malformed effect %v from %q", e, s)
			}
		}
	})
}
