package facts

import (
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// Code inside interpreters: a small scanner per language family finds what python -c, node -e,
// ruby -e and perl -e code does: deleting files, sending data off the machine, reading secret
// files, running code it decodes at run time. It reads text only, never runs anything, and
// every pattern is linear (RE2), so no input can make it slow or crash it.

// codeDeletes: calls that delete what their first argument names; tree: recursively.
var codeDeletes = lazyregexp.New(`(?:shutil\.rmtree|os\.remove|os\.unlink|os\.rmdir|os\.removedirs|send2trash|` +
	`(?:fs(?:\.promises)?|\))\.(?:rmSync|rm|rmdirSync|rmdir|unlinkSync|unlink)|rimraf(?:\.sync)?|fse?\.(?:removeSync|remove|emptyDirSync)|` +
	`FileUtils\.(?:rm_rf|rm_r|rm|remove_dir|remove_entry|remove_entry_secure|rmtree)|File\.delete|Dir\.delete|` +
	`rmtree|remove_tree|unlink)\s*\(?\s*(?:(?:os\.path\.expanduser|path\.resolve|File\.expand_path|Path)\s*\(\s*)?` +
	`(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|` + "`([^`]*)`" + `)`)

var treeDelete = lazyregexp.New(`rmtree|rm_rf|rm_r|remove_dir|remove_tree|rmSync|rimraf|removeSync|fs(?:\.promises)?\.rm\b|removedirs|emptyDirSync`)

// codeSends: calls that send data off the machine.
var codeSends = lazyregexp.New(`requests\.(?:post|put|patch)|httpx\.(?:post|put|patch)|urlopen\([^)]*data\s*=|` +
	`urllib\.request\.Request\([^)]*data\s*=|\.request\(\s*["']POST|smtplib|ftplib|socket\.(?:socket|create_connection)|` +
	`\bfetch\([^)]*(?:method\s*:\s*["'](?:POST|PUT|PATCH)|body\s*:)|axios\.(?:post|put|patch)|https?\.request\(|net\.(?:connect|createConnection)|` +
	`Net::HTTP(?:\.post|::Post|\.start)|TCPSocket|LWP::UserAgent|HTTP::Tiny|->post\(|IO::Socket`)

// codeSocket: code that opens a network connection or listens for one, in any language's own
// socket interface (awk's /inet/tcp files included).
var codeSocket = lazyregexp.New(`\bsocket\.socket|socket\.create_connection|\.connect\(\s*\(|:connect\(|(?:^|[^.\w])connect\(\s*["']|\.bind\(\s*[("']|` +
	`TCPSocket|TCPServer|IO::Socket|fsockopen|stream_socket_client|net\.(?:connect|createConnection|createServer|Socket)|` +
	`java\.net\.Socket|ServerSocket|/inet6?/(?:tcp|udp)/|require\(\s*["'](?:socket|net|dgram|tls)["']\)|\bSockets\b|New-Object\s+System\.Net\.Sockets`)

// codeRunsCommands: code that runs a command line or hands its descriptors to one.
var codeRunsCommands = lazyregexp.New(`subprocess|os\.system|os\.popen|os\.exec|pty\.spawn|os\.dup2|\bpopen\b|(?:^|[^.\w])exec\s*\(|` +
	`\bsystem\s*\(|IO\.popen|\bspawn|child_process|ProcessBuilder|Runtime\.getRuntime|io\.popen|os\.execute|` +
	`\brun\(\s*\x60|\brun\(\s*Cmd|\bpipeline\(|\|&\s*getline|proc_open|shell_exec|passthru|Invoke-Expression|\biex\b`)

// codeHome: code that builds a path from the home folder, in any of the languages scanned.
var codeHome = lazyregexp.New(`expanduser\(|Path\.home\(\)|\bhomedir\(\)|UserHomeDir\(|Dir\.home\b|` +
	`process\.env\.HOME\b|process\.env\[\s*["']HOME["']|os\.environ(?:\.get)?[\[(]\s*["']HOME["']|getenv\(\s*["']HOME["']|` +
	`ENV\[\s*["']HOME["']|\$ENV\{\s*["']?HOME["']?\s*\}|expand_path\(\s*["']~|File\.expand_path\(\s*["']~`)

// codeSecrets: code that reads the environment's secrets wholesale, or a credential store.
var codeSecrets = lazyregexp.New(`os\.environ\b|os\.getenv\(\s*["'][A-Z0-9_]*(?:TOKEN|SECRET|KEY|PASSWORD)|process\.env\b|ENV\[|%ENV|` +
	`keyring\.get_password|getpass`)

// codeDecodedExec: code that runs text it decodes: exec(base64.b64decode('...')),
// eval(Buffer.from('...', 'base64').toString()), eval(atob('...')).
var codeDecodedExec = lazyregexp.New(`(?:exec|eval|Function|system|popen|instance_eval|class_eval|run|call|check_call|check_output|Popen|getoutput|execSync|spawnSync)\s*\(\s*(?:compile\s*\(\s*)?` +
	`(?:[\w.()'"]{0,64}?(?:b64decode|standard_b64decode|urlsafe_b64decode|fromhex|decode64|decode_base64)|Buffer\.from|atob|unpack)\s*\(\s*` +
	`(?:"([^"]*)"|'([^']*)')(?:\s*,\s*["'](base64|hex)["'])?`)

// codePackShell: Perl code that runs text pack("H*", ...) spells out of hex.
var codePackShell = lazyregexp.New(`\b(system|exec|qx|eval|readpipe)\s*[({]?\s*pack\s*\(\s*["']H\*?["']\s*,\s*["']([0-9A-Fa-f]+)["']`)

// codeDynamicExec: code that runs text it builds at run time, with nothing literal to decode.
var codeDynamicExec = lazyregexp.New(`\b(?:exec|eval)\s*\(\s*[A-Za-z_][A-Za-z0-9_.]*\s*[\(\)]|new Function\(|(?:^|[^.\w])compile\(\s*[A-Za-z_][\w.]*\s*[,)]|` +
	`(?:system|popen|run|call|check_call|check_output|Popen)\s*\(\s*[\w.]*(?:b64decode|fromhex|decode64)\(\s*[A-Za-z_]`)

// codeDecodedShell: code that hands a shell text it decodes from data the command does not
// show: os.system(b64decode(payload)), subprocess.run(b64decode(x), shell=True). Hiding a
// command line that way has no purpose but hiding it.
var codeDecodedShell = lazyregexp.New(`(?:\bsystem|\bpopen|getoutput|execSync)\s*\(\s*[\w.]*(?:b64decode|fromhex|decode64|atob)\(\s*[A-Za-z_]|` +
	`(?:\brun|\bcall|check_call|check_output|Popen)\s*\(\s*[\w.]*(?:b64decode|fromhex|decode64)\(\s*[A-Za-z_][^;\n]*shell\s*=\s*True`)

// codeStrings are the string literals of a piece of code. Its bounded repetitions make it the
// costliest pattern to compile (about 3 ms, more than all the others together), so it is compiled
// the first time code is scanned, not at every start of the binary: the host hook is a process
// per tool call.
var codeStrings = lazyregexp.New(`"((?:[^"\\\n]|\\.){1,1000})"|'((?:[^'\\\n]|\\.){1,1000})'`)

// maxCodeBytes bounds the code scanned per snippet; the rest is flagged, not read.
const maxCodeBytes = 256 << 10

// scanCode records what interpreter code does: the files it deletes, reads (string literals that
// are paths, for the read rules) and sends, and the code it decodes and runs, which is analysed
// in turn.
func (a *Analysis) scanCode(name, code string, w *walker) {
	if len(code) > maxCodeBytes {
		a.Dynamic = append(a.Dynamic, name+" code longer than the analysis limit")
		code = code[:maxCodeBytes]
	}
	for _, m := range codeDeletes.FindAllStringSubmatch(code, 64) {
		a.CodeActs = append(a.CodeActs, CodeAct{Kind: CodeDelete, By: name, Target: m[1] + m[2] + m[3], Tree: treeDelete.MatchString(m[0])})
	}
	for _, m := range codeStrings.FindAllStringSubmatch(code, 256) {
		if s := m[1] + m[2]; codePath(s) {
			a.CodePaths = append(a.CodePaths, s)
		}
	}
	if codeSocket.MatchString(code) && codeRunsCommands.MatchString(code) {
		a.CodeActs = append(a.CodeActs, CodeAct{Kind: CodeRemoteShell, By: name})
	}
	a.CodeActs = append(a.CodeActs, codeAgents(name, code)...)
	if codeHome.MatchString(code) {
		a.CodeActs = append(a.CodeActs, CodeAct{Kind: CodeHome, By: name})
	}
	if codeSends.MatchString(code) {
		e := CodeAct{Kind: CodeSend, By: name, Secret: codeSecrets.MatchString(code)}
		a.CodeActs = append(a.CodeActs, e)
	}
	// The patterns below are costly to run and need words most code lacks: looked for first.
	decodes := containsAny(code, "decode", "fromhex", "atob", "Buffer.from", "unpack")
	builds := decodes || containsAny(code, "exec", "eval", "Function", "compile")
	for _, m := range codeDecodedExec.FindAllStringSubmatch(code, 16) {
		if !decodes {
			break
		}
		lit := m[1] + m[2]
		decoded, ok := decodeLiteral(lit, m[0], m[3])
		if !ok {
			a.Dynamic = append(a.Dynamic, name+" runs code it decodes at run time")
			continue
		}
		if !a.runDecoded(name, decoded, w, true, true) { // as code of the same language, and a shell's
			return
		}
	}
	if strings.Contains(code, "pack") {
		for _, m := range codePackShell.FindAllStringSubmatch(code, 8) {
			// Perl's pack("H*", hex) is the text the hex spells: system and backticks hand it to a
			// shell, eval to Perl.
			b, err := hex.DecodeString(m[2])
			if err != nil {
				a.Dynamic = append(a.Dynamic, name+" runs code it decodes at run time")
				continue
			}
			if !a.runDecoded(name, string(b), w, m[1] == "eval", m[1] != "eval") {
				return
			}
		}
	}
	if decodes && codeDecodedShell.MatchString(code) {
		a.Obfuscated = append(a.Obfuscated, name+" hands a shell a command it decodes at run time")
	} else if builds && codeDynamicExec.MatchString(code) {
		a.Dynamic = append(a.Dynamic, name+" runs code it builds at run time")
	}
}

// runDecoded judges text that code decodes and runs: as code of its own language (interp), as a
// shell's (shell), or both. It reports false once the analysis limit is reached, when the caller
// stops; past maxDepth the text is not read, and the code counts as building what it runs.
func (a *Analysis) runDecoded(name, text string, w *walker, interp, shell bool) bool {
	a.expanded += len(text)
	if a.expanded > maxExpandBytes {
		a.exceed("decoded code adds up to more than the analysis limit")
		return false
	}
	if w.depth >= maxDepth {
		a.Dynamic = append(a.Dynamic, name+" runs code it decodes at run time, nested deeper than the analysis follows")
		return true
	}
	w.depth++
	if interp {
		a.interp(name, text, w)
	}
	if shell {
		a.shell(text, w.depth, w.scope())
	}
	w.depth--
	return true
}

// sedExecutes reports whether a sed script runs commands: the e command, or the e flag of s.
func sedExecutes(args []string) bool {
	scripts := OptionValues(args, "-e", "--expression")
	if len(scripts) == 0 {
		if ops := Operands(args); len(ops) > 0 {
			scripts = ops[:1]
		}
	}
	for _, sc := range scripts {
		for _, cmd := range strings.FieldsFunc(sc, func(r rune) bool { return r == ';' || r == '\n' }) {
			cmd = strings.TrimLeft(cmd, " \t0123456789,$/!")
			if strings.HasPrefix(cmd, "e") && (len(cmd) == 1 || cmd[1] == ' ') {
				return true
			}
			if len(cmd) > 2 && cmd[0] == 's' {
				d := cmd[1]
				parts, esc := 0, false
				for i := 2; i < len(cmd); i++ {
					switch {
					case esc:
						esc = false
					case cmd[i] == '\\':
						esc = true
					case cmd[i] == d:
						parts++
						if parts == 2 && strings.Contains(cmd[i+1:], "e") {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// decodeLiteral decodes the literal a decoding call was given: base64 unless the call or its
// encoding argument says hex.
func decodeLiteral(lit, call, enc string) (string, bool) {
	if strings.Contains(call, "fromhex") || enc == "hex" {
		b, err := hex.DecodeString(lit)
		return string(b), err == nil
	}
	b, err := base64.StdEncoding.DecodeString(lit)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(lit)
	}
	return string(b), err == nil
}

// codePath reports whether a literal in code may name a file: absolute, from a home, or relative
// to the folder the code runs in, which is where open('../../local_x/outputs/a') and
// glob('../../.ss?/*') reach out of it. A URL, or a literal that is only a dot-led word (".5",
// ".json"), names no file the read rules could protect.
func codePath(s string) bool {
	switch {
	case !LooksLikePath(s) || strings.HasPrefix(s, "of=") || strings.Contains(s, "://"):
		return false
	case strings.ContainsAny(s, "/~"):
		return true
	}
	return len(s) > 1 && s[0] == '.' && !strings.ContainsAny(s[1:], ". ") // .env, .netrc: a dotfile here
}

// CodeAct is something interpreter code does, found by its shape, before paths are resolved.
type CodeAct struct {
	Kind   CodeActKind
	By     string
	Target string // a path, for deletes
	Tree   bool
	Secret bool
}

// CodeActKind is what a CodeAct does.
type CodeActKind int

const (
	CodeDelete      CodeActKind = iota + 1 // deletes target (a tree, with tree)
	CodeRemoteShell                        // runs commands it reads from a socket
	CodeSend                               // sends data over the network (secrets, with secret)
	// CodeAgent starts an AI agent: Target is "sdk:<package>" for an agent SDK imported, or the
	// agent program spawned; for claude, Secret marks options that leave the session's hook out.
	CodeAgent
	// CodeHome builds paths from the home folder (os.path.expanduser, os.homedir(),
	// process.env.HOME, Path.home()): which file it reaches is known only at run time, and may be
	// any under the home.
	CodeHome
)

// containsAny reports whether s contains any of the words.
func containsAny(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// codeAgentSDK is an import of an agent SDK, in Python or JavaScript (a comment mentioning one is
// no import: lines are looked at one by one, comments skipped).
//
// Besides Anthropic's and OpenAI's Codex SDK, the libraries whose agents run code or shell
// commands on the machine they run on by design: smolagents' code agents, Open Interpreter, aider
// as a library, the Gemini and Qwen CLIs' cores.
var codeAgentSDK = lazyregexp.New(`^(?:from\s+(claude_agent_sdk|claude_code_sdk|smolagents|interpreter|aider\.coders|aider)\b|import\s+(claude_agent_sdk|claude_code_sdk|smolagents|interpreter)\b|.*(?:\brequire\s*\(|\bfrom\s|\bimport\s*\(?)\s*['"](@anthropic-ai/claude-agent-sdk|@anthropic-ai/claude-code|@openai/codex-sdk|@google/gemini-cli-core|@qwen-code/qwen-code-core|@openai/codex)['"])`)

// codeAgentSpawn is an agent program spawned by code: the program, the first string handed to a
// process-starting call.
var codeAgentSpawn = lazyregexp.New(`(?:subprocess\.\w+|Popen|os\.system|os\.popen|spawn\w*|exec\w*|execFile\w*|Command)\s*\(\s*\[?\s*["'](?:[\w./-]*/)?(claude|codex|gemini|qwen|cursor-agent|copilot|aider|goose|opencode|amp|crush)\b`)

// codeClaudeUnguarded are what code passing them to a spawned claude leaves the session's hook out
// with.
var codeClaudeUnguarded = lazyregexp.New(`--setting-sources|--settings\b|--mcp-config|--strict-mcp-config|--plugin-dir|--agents\b|--bare\b|--safe-mode|--dangerously-skip-permissions|bypassPermissions|CLAUDE_CONFIG_DIR|CLAUDE_CODE_SIMPLE|CLAUDE_CODE_SAFE_MODE`)

// codeAgents finds the agents interpreter code starts.
func codeAgents(name, code string) []CodeAct {
	if !containsAny(code, "claude", "codex", "gemini", "qwen", "cursor-agent", "copilot", "aider", "goose", "opencode", "amp", "crush", "smolagents", "interpreter") {
		return nil
	}
	var acts []CodeAct
	for line := range strings.Lines(code) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") || strings.HasPrefix(t, "//") || strings.HasPrefix(t, "*") || strings.HasPrefix(t, "/*") {
			continue
		}
		if m := codeAgentSDK.FindStringSubmatch(t); m != nil {
			acts = append(acts, CodeAct{Kind: CodeAgent, By: name, Target: "sdk:" + m[1] + m[2] + m[3]})
		}
	}
	for _, m := range codeAgentSpawn.FindAllStringSubmatch(code, 8) {
		acts = append(acts, CodeAct{Kind: CodeAgent, By: name, Target: m[1], Secret: m[1] == "claude" && codeClaudeUnguarded.MatchString(code)})
	}
	return acts
}
