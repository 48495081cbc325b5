package effects

import (
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// SQL sent to a database, whoever sends it (psql -c, a connector's query argument, a string in
// interpreter code), is judged by what its statements do to the server: destroy schema or rows,
// leave the read-only transaction a connector wrapped it in, make the server run a program or
// touch its own files, print credentials, or hand out privileges. The lexer knows the quoting of
// the common dialects (PostgreSQL, MySQL, SQLite, SQL Server) and nothing of their grammars
// beyond the words that start those effects: anything it does not recognise has none.

// sqlLimits bound what one text can cost.
const (
	sqlMaxText       = 256 << 10
	sqlMaxStatements = 1000
	sqlMaxTokens     = 20000
)

// sqlToken is one word (folded to upper case, dotted names joined), string literal (its text),
// or punctuation character.
type sqlToken struct {
	text string
	kind byte // 'w' word or quoted identifier, 's' string, 'p' punctuation
}

// sqlStatements splits SQL text into statements of tokens, comments dropped.
func sqlStatements(s string) [][]sqlToken {
	if len(s) > sqlMaxText {
		s = s[:sqlMaxText]
	}
	var stmts [][]sqlToken
	var cur []sqlToken
	n := 0
	for i := 0; i < len(s) && n < sqlMaxTokens && len(stmts) < sqlMaxStatements; {
		c := s[i]
		switch {
		case c == ';':
			if len(cur) > 0 {
				stmts, cur = append(stmts, cur), nil
			}
			i++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(s[i:], "--") || c == '#' && (i+1 == len(s) || s[i+1] == ' '):
			i = lineEnd(s, i)
		case strings.HasPrefix(s[i:], "/*"):
			i = blockCommentEnd(s, i)
		case c == '\'':
			text, end := quoted(s, i, '\'')
			cur, i = append(cur, sqlToken{text, 's'}), end
		case c == '"' || c == '`' || c == '[':
			closer := map[byte]byte{'"': '"', '`': '`', '[': ']'}[c]
			text, end := quoted(s, i, closer)
			cur, i = appendWord(cur, strings.ToUpper(text)), end
		case c == '$' && dollarTag(s[i:]) != "":
			tag := dollarTag(s[i:])
			body, rest, _ := strings.Cut(s[i+len(tag):], tag)
			cur, i = append(cur, sqlToken{body, 's'}), len(s)-len(rest)
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			cur, i = appendWord(cur, strings.ToUpper(s[i:j])), j
		default:
			cur, i = append(cur, sqlToken{string(c), 'p'}), i+1
		}
		n++
	}
	if len(cur) > 0 && len(stmts) < sqlMaxStatements {
		stmts = append(stmts, cur)
	}
	return stmts
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// appendWord adds a word, joining it to a name before it across a dot (auth.users, "mysql"."user").
func appendWord(toks []sqlToken, w string) []sqlToken {
	if n := len(toks); n >= 2 && toks[n-1].text == "." && toks[n-2].kind == 'w' {
		toks[n-2].text += "." + w
		return toks[:n-1]
	}
	return append(toks, sqlToken{w, 'w'})
}

func lineEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// blockCommentEnd skips a /* */ comment, nested as PostgreSQL nests them.
func blockCommentEnd(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			depth, i = depth+1, i+2
		case strings.HasPrefix(s[i:], "*/"):
			depth, i = depth-1, i+2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// quoted reads a literal or identifier opened at s[i]: a doubled closer is one, and in a string a
// backslash escapes the next character (MySQL, PostgreSQL's E”).
func quoted(s string, i int, closer byte) (string, int) {
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == closer && j+1 < len(s) && s[j+1] == closer:
			b.WriteByte(closer)
			j++
		case s[j] == closer:
			return b.String(), j + 1
		case s[j] == '\\' && closer == '\'' && j+1 < len(s):
			b.WriteByte(s[j+1])
			j++
		default:
			b.WriteByte(s[j])
		}
	}
	return b.String(), len(s)
}

// dollarTag is the $tag$ opening a PostgreSQL dollar-quoted string at the start of s, or "".
func dollarTag(s string) string {
	for j := 1; j < len(s) && j < 64; j++ {
		switch c := s[j]; {
		case c == '$':
			return s[:j+1]
		case !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 1 && c >= '0' && c <= '9'):
			return ""
		}
	}
	return ""
}

// SQLEffects are the effects of SQL text sent by a program or a connector.
func SQLEffects(by, text string) []Effect {
	var out []Effect
	ownTx := false // a transaction the text opened itself: its COMMIT leaves nothing
	stmts := sqlStatements(text)
	for i, st := range stmts {
		words := sqlWords(st)
		switch {
		case startsWith(words, "BEGIN") || startsWith(words, "START", "TRANSACTION"):
			ownTx = true
		case startsWith(words, "COMMIT") || startsWith(words, "END") || startsWith(words, "ROLLBACK") || startsWith(words, "ABORT"):
			if !ownTx && i+1 < len(stmts) {
				out = append(out, sqlEffect(by, "leave-read-only", st))
			}
			ownTx = false
		}
		out = append(out, statementEffects(by, st, words)...)
	}
	return out
}

// sqlWords are a statement's words and punctuation, without literals: what its keywords are.
func sqlWords(st []sqlToken) []string {
	var w []string
	for _, t := range st {
		if t.kind != 's' {
			w = append(w, t.text)
		}
	}
	return w
}

func startsWith(words []string, prefix ...string) bool {
	if len(words) < len(prefix) {
		return false
	}
	for i, p := range prefix {
		if words[i] != p {
			return false
		}
	}
	return true
}

// sqlEffect names what a statement does: its first words, as what=.
func sqlEffect(by, what string, st []sqlToken, flags ...string) Effect {
	var head []string
	for _, t := range st {
		if len(head) == 6 {
			break
		}
		head = append(head, t.text)
	}
	e := New(EffectDatabase, by, what, "")
	for _, f := range flags {
		e.Attrs = append(e.Attrs, [2]string{f, ""})
	}
	e.Attrs = append(e.Attrs, [2]string{"what", clip(strings.Join(head, " "), 80)})
	return e
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// statementEffects judge one statement by its words.
func statementEffects(by string, st []sqlToken, words []string) []Effect {
	var out []Effect
	add := func(what string, flags ...string) { out = append(out, sqlEffect(by, what, st, flags...)) }
	if startsWith(words, "EXPLAIN") && !containsWord(words, "ANALYZE") && !containsWord(words, "ANALYSE") {
		return nil // a plan, not a run
	}
	if destroys(words) {
		add("destroy")
	}
	if leavesReadOnly(words) {
		add("leave-read-only")
	}
	if runsOnServer(words, st) {
		add("server-exec")
	}
	if touchesServerFiles(words, st) {
		add("server-file")
	}
	if readsCredentials(words) {
		add("credentials")
	}
	if priv, super := grantsPrivilege(words, st); priv {
		if super {
			add("privilege", "superuser")
		} else {
			add("privilege")
		}
	}
	return out
}

func containsWord(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// containsSeq reports the words in sequence anywhere in a statement.
func containsSeq(words []string, seq ...string) bool {
	for i := range words {
		if startsWith(words[i:], seq...) {
			return true
		}
	}
	return false
}

// droppable are the things whose DROP destroys data or the schema that holds it.
var droppable = nameset.Of("TABLE", "DATABASE", "SCHEMA", "VIEW", "MATERIALIZED", "INDEX", "USER", "ROLE", "FUNCTION",
	"PROCEDURE", "TRIGGER", "SEQUENCE", "TYPE", "EXTENSION", "OWNED", "COLLECTION", "KEYSPACE", "TABLESPACE", "LOGIN",
	"COLUMN", "CONSTRAINT", "POLICY", "PUBLICATION", "SUBSCRIPTION", "SERVER", "DOMAIN", "STAGE", "WAREHOUSE")

// destroys: DROP of a schema object anywhere (also ALTER TABLE … DROP), TRUNCATE, and DELETE or
// UPDATE of every row (no WHERE, or one that is always true).
func destroys(words []string) bool {
	for i, w := range words {
		switch {
		case w == "DROP" && i+1 < len(words) && droppable.Has(words[i+1]):
			return true
		case w == "TRUNCATE" && statementAt(words, i):
			return true
		case w == "DELETE" && statementAt(words, i) && startsWith(words[i+1:], "FROM") && len(words) > i+2:
			if rest := words[i+3:]; tableClause(rest, "WHERE", "USING", "RETURNING", "LIMIT", "ORDER") && everyRow(rest) {
				return true
			}
		case w == "UPDATE" && statementAt(words, i) && len(words) > i+1:
			if rest := words[i+2:]; len(rest) > 0 && rest[0] != ")" && tableClause(rest, "SET") && everyRow(rest) {
				return true
			}
		}
	}
	return false
}

// statementAt reports a statement starting at words[i]: the first word, in parentheses (a CTE),
// or the statement EXPLAIN ANALYZE runs.
func statementAt(words []string, i int) bool {
	return i == 0 || words[i-1] == "(" || words[i-1] == "ANALYZE" || words[i-1] == "ANALYSE" || words[i-1] == "VERBOSE"
}

// tableClause reports that what follows a statement's table is SQL, not prose ("delete from my
// calendar all events"): its end, or one of the keywords that may follow, after at most an alias.
func tableClause(rest []string, next ...string) bool {
	if len(rest) > 0 && rest[0] == "AS" {
		rest = rest[1:]
	}
	end := !containsWord(next, "SET") // an UPDATE needs its SET
	for skip := 0; skip <= 1 && skip <= len(rest); skip++ {
		if len(rest) == skip && end || len(rest) > skip && (rest[skip] == ")" && end || containsWord(next, rest[skip])) {
			return true
		}
	}
	return false
}

// everyRow reports a DELETE or UPDATE with no WHERE before its end (or a RETURNING or a closing
// parenthesis), or with WHERE 1=1, WHERE TRUE, WHERE 1, WHERE x=x.
func everyRow(words []string) bool {
	depth := 0
	for i, w := range words {
		switch w {
		case "(":
			depth++
		case ")":
			if depth == 0 {
				return true
			}
			depth--
		case "RETURNING":
			if depth == 0 {
				return true
			}
		case "WHERE":
			if depth == 0 {
				return tautology(words[i+1:])
			}
		}
	}
	return true
}

func tautology(w []string) bool {
	switch {
	case len(w) == 0:
		return true
	case len(w) == 1 || len(w) >= 2 && (w[1] == ")" || w[1] == "RETURNING"):
		return w[0] == "TRUE" || w[0] == "1"
	case len(w) >= 3 && w[1] == "=":
		rest := w[3:]
		return w[0] == w[2] && (len(rest) == 0 || rest[0] == ")" || rest[0] == "RETURNING")
	}
	return false
}

// leavesReadOnly: switching the session or transaction to read-write, whatever the dialect.
func leavesReadOnly(words []string) bool {
	switch {
	case containsSeq(words, "READ", "WRITE") && (startsWith(words, "SET") || startsWith(words, "BEGIN") || startsWith(words, "START")):
		return true
	case startsWith(words, "SET") || startsWith(words, "PRAGMA") || startsWith(words, "RESET"):
		for i, w := range words {
			if readOnlySetting.Has(w) {
				return startsWith(words, "RESET") || i+2 < len(words) && falsy.Has(words[i+2]) || i+1 < len(words) && falsy.Has(words[i+1])
			}
		}
	}
	return false
}

var readOnlySetting = nameset.Of("DEFAULT_TRANSACTION_READ_ONLY", "TRANSACTION_READ_ONLY", "READ_ONLY", "SUPER_READ_ONLY",
	"QUERY_ONLY", "GLOBAL.READ_ONLY", "SESSION.TRANSACTION_READ_ONLY", "@@READ_ONLY", "@@GLOBAL.READ_ONLY")

var falsy = nameset.Of("OFF", "FALSE", "0", "NO")

// serverPrograms are functions and procedures that make a database server run a program, load
// code, or reach out to another server for the caller.
var serverPrograms = nameset.Of("XP_CMDSHELL", "SP_EXECUTE_EXTERNAL_SCRIPT", "SP_OACREATE", "SP_OAMETHOD", "SYS_EXEC", "SYS_EVAL",
	"LOAD_EXTENSION", "DBLINK", "DBLINK_EXEC", "DBLINK_CONNECT", "OPENROWSET", "OPENDATASOURCE", "OPENQUERY", "XP_DIRTREE",
	"XP_FILEEXIST", "XP_SUBDIRS", "XP_REGWRITE", "XP_REGREAD", "DBMS_SCHEDULER.CREATE_JOB", "DBMS_JAVA.RUNJAVA",
	"SP_ADDEXTENDEDPROC", "SP_START_JOB")

// untrustedLanguages run with the server's own rights on its machine.
var untrustedLanguages = lazyregexp.New(`^(PLPYTHON3?U|PLPERLU|PLTCLU|PLSH|PLV8U?|C|INTERNAL|PLJAVAU|PLRUBYU|PLRU)$`)

// runsOnServer: COPY … PROGRAM, a function in an untrusted language, a shell or network
// procedure, a library loaded by name, server settings that run commands.
func runsOnServer(words []string, st []sqlToken) bool {
	for i, w := range words {
		switch {
		case serverPrograms.Has(w) && (i+1 < len(words) && words[i+1] == "(" || i > 0 && (words[i-1] == "EXEC" || words[i-1] == "EXECUTE" || words[i-1] == "CALL")):
			return true
		case w == "PROGRAM" && startsWith(words, "COPY"):
			return true
		case w == "LANGUAGE" && i+1 < len(words) && untrustedLanguages.MatchString(words[i+1]) && containsWord(words[:i], "CREATE"):
			return true
		case w == "LOAD" && i == 0 && len(st) > 1 && st[1].kind == 's':
			return true
		case w == "SP_CONFIGURE" && strings.Contains(strings.ToUpper(literals(st)), "XP_CMDSHELL"):
			return true
		case strings.HasSuffix(w, "_COMMAND") || strings.HasSuffix(w, "PRELOAD_LIBRARIES"):
			if startsWith(words, "ALTER", "SYSTEM") || startsWith(words, "SET") {
				return true
			}
		}
	}
	return false
}

func literals(st []sqlToken) string {
	var b strings.Builder
	for _, t := range st {
		if t.kind == 's' {
			b.WriteString(t.text + " ")
		}
	}
	return b.String()
}

// serverFileFunctions read or write files on the database server's machine.
var serverFileFunctions = nameset.Of("PG_READ_FILE", "PG_READ_BINARY_FILE", "PG_LS_DIR", "PG_STAT_FILE", "PG_FILE_WRITE",
	"LO_IMPORT", "LO_EXPORT", "LOAD_FILE", "READFILE", "WRITEFILE", "UTL_FILE.FOPEN", "UTL_FILE.PUT_LINE", "PG_LOGDIR_LS")

// touchesServerFiles: server-side COPY to or from a file, INTO OUTFILE/DUMPFILE, LOAD DATA INFILE,
// BULK INSERT, file functions, and SQLite's ATTACH or VACUUM INTO a path outside the project.
func touchesServerFiles(words []string, st []sqlToken) bool {
	for i, w := range words {
		switch {
		case serverFileFunctions.Has(w) && i+1 < len(words) && words[i+1] == "(":
			return true
		case w == "INTO" && i+1 < len(words) && (words[i+1] == "OUTFILE" || words[i+1] == "DUMPFILE"):
			return true
		case w == "INFILE" || w == "BULK" && i+1 < len(words) && words[i+1] == "INSERT":
			return true
		}
	}
	for i := 0; i+1 < len(st); i++ {
		t, next := st[i], st[i+1]
		if t.kind != 'w' || next.kind != 's' {
			continue
		}
		switch {
		case startsWith(words, "COPY") && (t.text == "TO" || t.text == "FROM"):
			return true
		case (startsWith(words, "ATTACH") || startsWith(words, "VACUUM")) && (t.text == "ATTACH" || t.text == "DATABASE" || t.text == "INTO"):
			if p := next.text; p != ":memory:" && p != "" && (strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.Contains(p, "..") || strings.HasPrefix(strings.ToLower(p), "file:")) {
				return true
			}
		}
	}
	return false
}

// credentialTables hold the server's or an application's credentials.
var credentialTables = lazyregexp.New(`^(PG_SHADOW|PG_AUTHID|PG_CATALOG\.PG_SHADOW|PG_CATALOG\.PG_AUTHID|PG_USER_MAPPINGS?|PG_CATALOG\.PG_USER_MAPPINGS?|` +
	`MYSQL\.USER|MYSQL\.GLOBAL_PRIV|SYS\.SQL_LOGINS|MASTER\.SYS\.SQL_LOGINS|SYS\.SYSLOGINS|SYSLOGINS|DBA_USERS|SYS\.USER\$|` +
	`VAULT\.DECRYPTED_SECRETS|VAULT\.SECRETS|AUTH\.REFRESH_TOKENS|AUTH\.MFA_FACTORS|AUTH\.ONE_TIME_TOKENS|` +
	`([A-Z0-9_]+\.)?[A-Z0-9_]*(API_?KEYS?|ACCESS_TOKENS?|REFRESH_TOKENS?|AUTH_TOKENS?|API_TOKENS?|PERSONAL_ACCESS_TOKENS|OAUTH_[A-Z_]*TOKENS?|` +
	`SECRETS|CREDENTIALS|PASSWORDS|PRIVATE_KEYS)|([A-Z0-9_]+\.)?([A-Z0-9_]+_)?TOKENS)$`)

// credentialColumns name a column that holds a credential, not one about it (…_at, …_id, …_type).
var credentialColumns = lazyregexp.New(`^([A-Z0-9_]+\.)?(([A-Z0-9]+_)*(PASSWORD|PASSWD|PASSWORD_HASH|HASHED_PASSWORD|ENCRYPTED_PASSWORD|` +
	`ROLPASSWORD|AUTHENTICATION_STRING|SECRET|CLIENT_SECRET|SECRET_KEY|API_?KEY|API_TOKEN|ACCESS_TOKEN|REFRESH_TOKEN|AUTH_TOKEN|` +
	`SESSION_TOKEN|TOKEN|PRIVATE_KEY|OTP_SECRET|TOTP_SECRET|MFA_SECRET|RECOVERY_CODES|DECRYPTED_SECRET))$`)

// aggregates print counts about rows, not their values.
var aggregates = nameset.Of("COUNT", "MAX", "MIN", "EXISTS")

// readsCredentials: a SELECT (or COPY of one) whose columns name credentials, or that reads a
// table of them for anything but a count.
func readsCredentials(words []string) bool {
	sel := -1
	for i, w := range words {
		if w == "SELECT" {
			sel = i
			break
		}
	}
	if sel < 0 {
		return false
	}
	onlyAggregates, star := true, false
	for i := sel + 1; i < len(words) && words[i] != "FROM"; i++ {
		w, prev := words[i], words[i-1]
		switch {
		case credentialColumns.MatchString(w):
			return true
		case w == "*":
			star = star || prev != "("
			onlyAggregates = onlyAggregates && prev == "("
		case w == "" || aggregates.Has(w) || w == "AS" || w == "DISTINCT" || prev == "AS" || !isWordByte(w[0]):
		default:
			onlyAggregates = false
		}
	}
	for i, w := range words {
		if (w != "FROM" && w != "JOIN") || i+1 >= len(words) {
			continue
		}
		switch t := words[i+1]; {
		case credentialTables.MatchString(t) && !onlyAggregates, systemCredentialTable(t), star && t == "AUTH.USERS":
			return true
		}
	}
	return false
}

// systemCredentialTable is a server's own table of logins: even a count of it is reconnaissance.
func systemCredentialTable(t string) bool {
	return credentialTables.MatchString(t) && (strings.Contains(t, "PG_") || strings.HasPrefix(t, "MYSQL.") || strings.Contains(t, "LOGINS"))
}

// grantsPrivilege: GRANT, users and roles made or changed, a role taken; superuser when what is
// handed out is everything.
func grantsPrivilege(words []string, st []sqlToken) (priv, super bool) {
	switch {
	case startsWith(words, "GRANT"), startsWith(words, "ALTER", "SERVER", "ROLE"),
		startsWith(words, "CREATE") && len(words) > 1 && (words[1] == "USER" || words[1] == "ROLE" || words[1] == "LOGIN"),
		startsWith(words, "ALTER") && len(words) > 1 && (words[1] == "USER" || words[1] == "ROLE" || words[1] == "LOGIN" || words[1] == "SYSTEM"),
		startsWith(words, "SET", "ROLE"), startsWith(words, "SET", "SESSION", "AUTHORIZATION"),
		containsWord(words, "SP_ADDSRVROLEMEMBER"), containsWord(words, "SP_ADDLOGIN"):
	default:
		return false, false
	}
	super = containsWord(words, "SUPERUSER") || containsWord(words, "BYPASSRLS") || containsWord(words, "SYSADMIN") ||
		strings.Contains(strings.ToUpper(literals(st)), "SYSADMIN") ||
		containsWord(words, "DBA") || containsSeq(words, "ALL", "PRIVILEGES", "ON", "*") || containsSeq(words, "WITH", "GRANT", "OPTION")
	return true, super
}

// sqlStart is the first word of a statement that can do something to a server.
var sqlStart = lazyregexp.New(`(?is)^\s*(?:(?:--[^\n]*\n|/\*.*?\*/)\s*)*\(?\s*(SELECT|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|TRUNCATE|WITH|COPY|GRANT|` +
	`BEGIN|COMMIT|END|ROLLBACK|START|SET|RESET|PRAGMA|EXEC|EXECUTE|CALL|ATTACH|VACUUM|LOAD|EXPLAIN|MERGE|REPLACE|UPSERT|DECLARE)\b`)

// looksLikeSQL reports text that begins as a statement does.
func looksLikeSQL(s string) bool { return sqlStart.MatchString(s) }

// sqlKeys are argument names whose value is SQL; dbWords, among the words of a connector's or
// tool's name, mark one that talks to a database.
var sqlKeys = lazyregexp.New(`(?i)^(sql|query|queries|statement|statements|stmt|sql_?query|sql_?statement|script|command|migration|ddl|dml)$`)

var dbWords = nameset.Of("sql", "postgres", "postgresql", "pg", "mysql", "mariadb", "sqlite", "db", "database", "supabase", "neon",
	"bigquery", "snowflake", "duckdb", "clickhouse", "redshift", "mssql", "sqlserver", "oracle", "cockroach", "planetscale",
	"turso", "d1", "databricks", "athena", "trino", "presto", "query", "execute", "migration", "migrate")

// SQLArgument reports whether a connector argument carries SQL to judge: SQL-shaped, under a key
// that names SQL, or sent by a connector or tool that talks to a database.
func SQLArgument(server, tool, key, v string) bool {
	if !looksLikeSQL(v) {
		return false
	}
	return sqlKeys.MatchString(key) || NameHas(dbWords, server, tool)
}

// sqlLiteral finds string literals in interpreter code that are SQL statements by their shape
// (cursor.execute("DROP TABLE users"), db.exec(`DELETE FROM t`)).
var sqlLiteral = lazyregexp.New("(?is)([\"'`])(\\s*(?:DROP|DELETE|UPDATE|TRUNCATE|COPY|GRANT|ALTER|CREATE|SELECT|ATTACH|SET|COMMIT|LOAD|EXEC)\\s[^\"'`]*)([\"'`])")

// sqlInCode are the SQL statements string literals in code carry.
func sqlInCode(code string) []string {
	var out []string
	for _, m := range sqlLiteral.FindAllStringSubmatch(code, 64) {
		if m[1] == m[3] {
			out = append(out, m[2])
		}
	}
	return out
}
