package effects

import (
	"path"

	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// Containers and control planes. A container started with the host's namespaces, its root or its
// container socket is the host: its root is root on the Mac's VM or the Linux machine, with no
// boundary left between them. A control-plane call (aws, gcloud, az, kubectl) acts on a whole
// account: most of them are reads and ordinary deploys, a few take a protection away or hand
// access out, and those are told apart here by what they do, never by the program's name alone.

// The effect kinds of this file.
const (
	// EffectContainer: a container given the host: privileged, host-namespace, host-root,
	// host-system, host-home, docker-socket, cap=, node (kubectl debug node/…).
	EffectContainer EffectKind = "container"
	// EffectCloud: a control-plane call that takes a protection away or hands access out:
	// audit-off, admin-identity, cluster-admin, public-data, foreign-share; what= says which.
	EffectCloud EffectKind = "cloud"
)

var containerRunners = nameset.Of("docker", "podman", "nerdctl", "finch")

// escapeCaps are the capabilities that reach past a container: mounts, kernel modules, other
// processes' memory, raw devices, any file whatever its mode.
var escapeCaps = nameset.Of("ALL", "SYS_ADMIN", "SYS_MODULE", "SYS_PTRACE", "SYS_RAWIO", "DAC_READ_SEARCH", "DAC_OVERRIDE", "BPF", "PERFMON", "SYS_BOOT")

// rawDevice: a disk, memory or kernel device handed into a container.
var rawDevice = lazyregexp.New(`^/dev/(sd|hd|vd|xvd|nvme|disk|rdisk|dm-|mapper/|loop|mem$|kmem$|port$|kmsg$|cpu/)`)

// containerSocket: the runtime's own socket, which starts any container on the host.
var containerSocket = lazyregexp.New(`(^|/)(docker|containerd|podman|crio|cri-dockerd|buildkitd)\.sock$|^/var/run/docker$|^/run/containerd$`)

// hostSystem: folders of the host whose files are the machine's own (configuration, binaries,
// kernel interfaces, the runtime's state).
var hostSystem = lazyregexp.New(`^/(etc|root|boot|usr|bin|sbin|lib|lib64|proc|sys|dev|run|var/run|var/lib/docker|var/lib/containerd|var/lib/kubelet|System|Library|private/etc|private/var)(/|$)`)

// containerEffects: docker/podman/nerdctl/finch run, create and exec, and their compose and
// service forms, with what they give the container of the host.
func containerEffects(cmd *facts.Command, cwd string) []Effect {
	switch {
	case containerRunners.Has(cmd.Name):
		if !startsContainer(cmd) {
			return nil
		}
		return hostGrants(cmd, cmd.Args, cwd)
	case cmd.Name == "kubectl" || cmd.Name == "oc":
		return podGrants(cmd)
	}
	return nil
}

// startsContainer reports a runtime subcommand that starts or enters a container.
func startsContainer(cmd *facts.Command) bool {
	ops := facts.Operands(cmd.Args)
	for i, o := range ops {
		switch o {
		case "run", "create", "exec":
			return true
		case "container", "compose", "service":
			continue
		}
		if i > 2 {
			break
		}
	}
	return false
}

// grants are a container effect's attributes, each key and value once.
type grants []string

func (g *grants) add(k, v string) {
	for i := 0; i < len(*g); i += 2 {
		if (*g)[i] == k && (*g)[i+1] == v {
			return
		}
	}
	*g = append(*g, k, v)
}

func hostGrants(cmd *facts.Command, args []string, cwd string) []Effect {
	var attrs grants
	add := attrs.add
	for i, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		next := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		}
		switch name {
		case "--privileged":
			if !hasVal || val == "true" {
				add("privileged", "")
			}
		case "--pid", "--ipc", "--uts", "--userns", "--cgroupns":
			if next() == "host" {
				add("host-namespace", strings.TrimPrefix(name, "--"))
			}
		case "--cap-add":
			for c := range strings.SplitSeq(next(), ",") {
				if c = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_"); escapeCaps.Has(c) {
					add("cap", c)
				}
			}
		case "--security-opt":
			if v := next(); strings.Contains(v, "unconfined") || v == "label=disable" || v == "label:disable" {
				add("unconfined", v)
			}
		case "--device":
			if d, _, _ := strings.Cut(next(), ":"); rawDevice.MatchString(d) {
				add("device", d)
			}
		case "-v", "--volume":
			src, _, _ := strings.Cut(next(), ":")
			mountGrant(src, cwd, add)
		case "--mount":
			for kv := range strings.SplitSeq(next(), ",") {
				if k, v, ok := strings.Cut(kv, "="); ok && (k == "source" || k == "src") {
					mountGrant(v, cwd, add)
				}
			}
		}
	}
	if len(attrs) == 0 {
		return nil
	}
	return []Effect{New(EffectContainer, cmd.Name, attrs...)}
}

// mountGrant classifies a bind mount's source: the host's root, its system folders, the
// container socket, or a whole home. A named volume (no slash) is the runtime's own.
func mountGrant(src, cwd string, add func(k, v string)) {
	if src == "" || !strings.ContainsAny(src, "/~$") {
		return
	}
	p := facts.CanonPath(src, cwd)
	switch {
	case p == "/" || p == "/private" || p == "/host":
		add("host-root", "")
	case containerSocket.MatchString(p):
		add("docker-socket", p)
	case hostSystem.MatchString(p):
		add("host-system", p)
	case p == "~" || p == "/Users" || p == "/home":
		add("host-home", p)
	}
}

// podGrants: kubectl run/debug with a pod spec that takes the node (privileged, host namespaces,
// a hostPath), and kubectl debug of a node itself.
func podGrants(cmd *facts.Command) []Effect {
	ops := facts.Operands(cmd.Args)
	if len(ops) == 0 {
		return nil
	}
	var attrs []string
	switch ops[0] {
	case "debug":
		if slices.ContainsFunc(ops[1:], func(o string) bool { return strings.HasPrefix(o, "node/") || strings.HasPrefix(o, "nodes/") }) {
			attrs = append(attrs, "node", "")
		}
		if slices.ContainsFunc(facts.OptionValues(cmd.Args, "--profile"), func(v string) bool { return v == "sysadmin" || v == "netadmin" }) {
			attrs = append(attrs, "privileged", "")
		}
	case "run":
		if slices.Contains(cmd.Args, "--privileged") || slices.Contains(cmd.Args, "--privileged=true") {
			attrs = append(attrs, "privileged", "")
		}
		for _, o := range facts.OptionValues(cmd.Args, "--overrides") {
			attrs = append(attrs, specGrants(o)...)
		}
	}
	if len(attrs) == 0 {
		return nil
	}
	return []Effect{New(EffectContainer, cmd.Name, attrs...)}
}

var (
	specPrivileged = lazyregexp.New(`"privileged"\s*:\s*true|\bprivileged:\s*true\b`)
	specHostNS     = lazyregexp.New(`"?host(PID|IPC|Network|Users)"?\s*:\s*true`)
	specHostPath   = lazyregexp.New(`"?hostPath"?\s*:`)
	specCaps       = lazyregexp.New(`(?i)"?add"?\s*:\s*\[[^\]]*\b(ALL|SYS_ADMIN|SYS_MODULE|SYS_PTRACE|DAC_READ_SEARCH)\b`)
)

// specGrants reads a pod spec (JSON or YAML) for what it takes of the node.
func specGrants(spec string) []string {
	var attrs []string
	if specPrivileged.MatchString(spec) {
		attrs = append(attrs, "privileged", "")
	}
	if m := specHostNS.FindStringSubmatch(spec); m != nil {
		attrs = append(attrs, "host-namespace", strings.ToLower(m[1]))
	}
	if specHostPath.MatchString(spec) {
		attrs = append(attrs, "host-path", "")
	}
	if m := specCaps.FindStringSubmatch(spec); m != nil {
		attrs = append(attrs, "cap", strings.ToUpper(m[1]))
	}
	return attrs
}

// cloudAction is one control-plane call that takes a protection away or hands access out.
type cloudAction struct {
	prog  string
	words []string           // consecutive operands, after any global options
	args  *lazyregexp.Regexp // matched against the arguments joined by spaces, when set
	class string
	what  string
}

// A table of plain values, not closures: the compiler lays it out in the binary, where a closure
// per row was made at every process start.
var (
	adminPolicy    = lazyregexp.New(`(?i)arn:aws:iam::(aws|[0-9]{12}):policy/(AdministratorAccess|IAMFullAccess|PowerUserAccess)\b|"Action"\s*:\s*"(\*|iam:\*)"`)
	adminRole      = lazyregexp.New(`(?i)(^|[\s=])(roles/(owner|editor|iam\.[a-z]*admin|iam\.serviceAccount(TokenCreator|KeyAdmin|User)|resourcemanager\.[a-z]*admin)|owner|contributor|"?user access administrator"?|role-based access control administrator)(\s|$)`)
	clusterAdmin   = lazyregexp.New(`--clusterrole[= ](cluster-admin|admin)\b`)
	publicACL      = lazyregexp.New(`--acl[= ](public-read|public-read-write|authenticated-read)\b`)
	publicPolicy   = lazyregexp.New(`"Principal"\s*:\s*("\*"|\{\s*"AWS"\s*:\s*"\*")`)
	publicBlockOff = lazyregexp.New(`(?i)(BlockPublic[A-Za-z]*|IgnorePublicAcls|RestrictPublicBuckets)\s*[=:]\s*false`)
	allUsers       = lazyregexp.New(`(?i)\ballusers\b|\ballauthenticatedusers\b`)
	azPublic       = lazyregexp.New(`--public-access[= ](blob|container)\b|--allow-blob-public-access[= ]true\b`)
	shareAdd       = lazyregexp.New(`(?i)--operation-type[= ]add\b|--launch-permission[= ]["']?\{?"?Add|--create-volume-permission[= ]["']?\{?"?Add|--values-to-add\b|--attribute-name[= ]restore`)
	noAudit        = lazyregexp.New(`--no-enable\b|--no-is-logging\b|--disabled\b|--enable[= ]false\b`)
	secretOutput   = lazyregexp.New(`(^|\s)(-o|--output)[= ]?(yaml|json|jsonpath|go-template|custom-columns)|(^|\s)-o(yaml|json|jsonpath)`)
)

var cloudActions = []cloudAction{
	// Audit and detection switched off, or its record deleted.
	{prog: "aws", words: []string{"cloudtrail", "stop-logging"}, class: "audit-off", what: "CloudTrail logging"},
	{prog: "aws", words: []string{"cloudtrail", "delete-trail"}, class: "audit-off", what: "a CloudTrail trail"},
	{prog: "aws", words: []string{"cloudtrail", "put-event-selectors"}, args: lazyregexp.New(`\[\s*\]|ReadWriteType[=:]\s*"?(ReadOnly)`), class: "audit-off", what: "CloudTrail's events"},
	{prog: "aws", words: []string{"guardduty", "delete-detector"}, class: "audit-off", what: "GuardDuty"},
	{prog: "aws", words: []string{"guardduty", "update-detector"}, args: noAudit, class: "audit-off", what: "GuardDuty"},
	{prog: "aws", words: []string{"guardduty", "disassociate-from-administrator-account"}, class: "audit-off", what: "GuardDuty"},
	{prog: "aws", words: []string{"config", "stop-configuration-recorder"}, class: "audit-off", what: "AWS Config"},
	{prog: "aws", words: []string{"configservice", "stop-configuration-recorder"}, class: "audit-off", what: "AWS Config"},
	{prog: "aws", words: []string{"configservice", "delete-configuration-recorder"}, class: "audit-off", what: "AWS Config"},
	{prog: "aws", words: []string{"configservice", "delete-delivery-channel"}, class: "audit-off", what: "AWS Config"},
	{prog: "aws", words: []string{"securityhub", "disable-security-hub"}, class: "audit-off", what: "Security Hub"},
	{prog: "aws", words: []string{"ec2", "delete-flow-logs"}, class: "audit-off", what: "VPC flow logs"},
	{prog: "aws", words: []string{"logs", "delete-log-group"}, class: "audit-off", what: "a log group"},
	{prog: "aws", words: []string{"access-analyzer", "delete-analyzer"}, class: "audit-off", what: "IAM Access Analyzer"},
	{prog: "gcloud", words: []string{"logging", "sinks", "delete"}, class: "audit-off", what: "a log sink"},
	{prog: "gcloud", words: []string{"logging", "sinks", "update"}, args: noAudit, class: "audit-off", what: "a log sink"},
	{prog: "gcloud", words: []string{"logging", "logs", "delete"}, class: "audit-off", what: "a log"},
	{prog: "gcloud", words: []string{"services", "disable"}, args: lazyregexp.New(`(logging|monitoring|securitycenter|cloudaudit)\.googleapis\.com`), class: "audit-off", what: "an audit service"},
	{prog: "az", words: []string{"monitor", "diagnostic-settings", "delete"}, class: "audit-off", what: "diagnostic settings"},
	{prog: "az", words: []string{"monitor", "log-profiles", "delete"}, class: "audit-off", what: "a log profile"},
	{prog: "az", words: []string{"security", "pricing", "create"}, args: lazyregexp.New(`--tier[= ]free\b`), class: "audit-off", what: "Defender for Cloud"},

	// Identities or keys with administrator rights.
	{prog: "aws", words: []string{"iam", "create-access-key"}, class: "admin-identity", what: "an IAM access key"},
	{prog: "aws", words: []string{"iam", "create-login-profile"}, class: "admin-identity", what: "an IAM console password"},
	{prog: "aws", words: []string{"iam", "update-login-profile"}, class: "admin-identity", what: "an IAM console password"},
	{prog: "aws", words: []string{"iam", "attach-user-policy"}, args: adminPolicy, class: "admin-identity", what: "administrator rights"},
	{prog: "aws", words: []string{"iam", "attach-role-policy"}, args: adminPolicy, class: "admin-identity", what: "administrator rights"},
	{prog: "aws", words: []string{"iam", "attach-group-policy"}, args: adminPolicy, class: "admin-identity", what: "administrator rights"},
	{prog: "aws", words: []string{"iam", "put-user-policy"}, args: adminPolicy, class: "admin-identity", what: "administrator rights"},
	{prog: "aws", words: []string{"iam", "put-role-policy"}, args: adminPolicy, class: "admin-identity", what: "administrator rights"},
	{prog: "aws", words: []string{"iam", "update-assume-role-policy"}, class: "admin-identity", what: "who may take a role"},
	{prog: "gcloud", words: []string{"iam", "service-accounts", "keys", "create"}, class: "admin-identity", what: "a service account key"},
	{prog: "gcloud", words: []string{"add-iam-policy-binding"}, args: adminRole, class: "admin-identity", what: "an owner or administrator role"},
	{prog: "az", words: []string{"role", "assignment", "create"}, args: adminRole, class: "admin-identity", what: "an owner or administrator role"},
	{prog: "az", words: []string{"ad", "sp", "create-for-rbac"}, class: "admin-identity", what: "a service principal with a secret"},
	{prog: "az", words: []string{"ad", "sp", "credential", "reset"}, class: "admin-identity", what: "a service principal's secret"},
	{prog: "az", words: []string{"ad", "app", "credential", "reset"}, class: "admin-identity", what: "an application's secret"},
	{prog: "kubectl", words: []string{"create", "clusterrolebinding"}, args: clusterAdmin, class: "cluster-admin", what: "cluster-admin"},
	{prog: "kubectl", words: []string{"create", "rolebinding"}, args: clusterAdmin, class: "cluster-admin", what: "cluster-admin"},
	{prog: "kubectl", words: []string{"create", "token"}, class: "admin-identity", what: "a service account token"},

	// Storage made public.
	{prog: "aws", words: []string{"s3api", "put-bucket-acl"}, args: publicACL, class: "public-data", what: "a bucket"},
	{prog: "aws", words: []string{"s3api", "put-object-acl"}, args: publicACL, class: "public-data", what: "an object"},
	{prog: "aws", words: []string{"s3api", "put-bucket-policy"}, args: publicPolicy, class: "public-data", what: "a bucket"},
	{prog: "aws", words: []string{"s3api", "delete-public-access-block"}, class: "public-data", what: "a bucket's public access block"},
	{prog: "aws", words: []string{"s3control", "delete-public-access-block"}, class: "public-data", what: "the account's public access block"},
	{prog: "aws", words: []string{"s3api", "put-public-access-block"}, args: publicBlockOff, class: "public-data", what: "a bucket's public access block"},
	{prog: "aws", words: []string{"s3", "cp"}, args: publicACL, class: "public-data", what: "objects"},
	{prog: "aws", words: []string{"s3", "sync"}, args: publicACL, class: "public-data", what: "objects"},
	{prog: "gsutil", words: []string{"iam", "ch"}, args: allUsers, class: "public-data", what: "a bucket"},
	{prog: "gsutil", words: []string{"acl", "ch"}, args: allUsers, class: "public-data", what: "a bucket"},
	{prog: "gsutil", words: []string{"acl", "set", "public-read"}, class: "public-data", what: "a bucket"},
	{prog: "gcloud", words: []string{"storage", "buckets", "add-iam-policy-binding"}, args: allUsers, class: "public-data", what: "a bucket"},
	{prog: "gcloud", words: []string{"storage", "objects", "update"}, args: allUsers, class: "public-data", what: "objects"},
	{prog: "az", words: []string{"storage", "container", "set-permission"}, args: azPublic, class: "public-data", what: "a container"},
	{prog: "az", words: []string{"storage", "container", "create"}, args: azPublic, class: "public-data", what: "a container"},
	{prog: "az", words: []string{"storage", "account", "update"}, args: azPublic, class: "public-data", what: "a storage account"},

	// Snapshots and images shared with other accounts.
	{prog: "aws", words: []string{"ec2", "modify-snapshot-attribute"}, args: shareAdd, class: "foreign-share", what: "a disk snapshot"},
	{prog: "aws", words: []string{"ec2", "modify-image-attribute"}, args: shareAdd, class: "foreign-share", what: "a machine image"},
	{prog: "aws", words: []string{"rds", "modify-db-snapshot-attribute"}, args: shareAdd, class: "foreign-share", what: "a database snapshot"},
	{prog: "aws", words: []string{"rds", "modify-db-cluster-snapshot-attribute"}, args: shareAdd, class: "foreign-share", what: "a database snapshot"},
	{prog: "gcloud", words: []string{"compute", "images", "add-iam-policy-binding"}, class: "foreign-share", what: "a machine image"},
	{prog: "gcloud", words: []string{"compute", "snapshots", "add-iam-policy-binding"}, class: "foreign-share", what: "a disk snapshot"},
	{prog: "az", words: []string{"snapshot", "grant-access"}, class: "foreign-share", what: "a disk snapshot (a download link)"},
	{prog: "az", words: []string{"disk", "grant-access"}, class: "foreign-share", what: "a disk (a download link)"},
}

// secretReads are control-plane calls that print stored secrets: judged as credentials.
var secretReads = []cloudAction{
	{prog: "kubectl", words: []string{"get", "secret"}, args: secretOutput, what: "Kubernetes secrets"},
	{prog: "kubectl", words: []string{"get", "secrets"}, args: secretOutput, what: "Kubernetes secrets"},
	{prog: "oc", words: []string{"get", "secret"}, args: secretOutput, what: "Kubernetes secrets"},
	{prog: "oc", words: []string{"get", "secrets"}, args: secretOutput, what: "Kubernetes secrets"},
	{prog: "aws", words: []string{"secretsmanager", "get-secret-value"}, what: "an AWS secret"},
	{prog: "aws", words: []string{"secretsmanager", "batch-get-secret-value"}, what: "AWS secrets"},
	{prog: "aws", words: []string{"ssm", "get-parameter"}, args: lazyregexp.New(`--with-decryption\b`), what: "an AWS parameter"},
	{prog: "aws", words: []string{"ssm", "get-parameters"}, args: lazyregexp.New(`--with-decryption\b`), what: "AWS parameters"},
	{prog: "aws", words: []string{"ssm", "get-parameters-by-path"}, args: lazyregexp.New(`--with-decryption\b`), what: "AWS parameters"},
	{prog: "gcloud", words: []string{"secrets", "versions", "access"}, what: "a Google Cloud secret"},
	{prog: "az", words: []string{"keyvault", "secret", "show"}, what: "an Azure Key Vault secret"},
	{prog: "az", words: []string{"keyvault", "secret", "download"}, what: "an Azure Key Vault secret"},
	{prog: "vault", words: []string{"kv", "get"}, what: "a Vault secret"},
	{prog: "vault", words: []string{"read"}, args: lazyregexp.New(`(^|\s)(secret|kv|database/creds|aws/creds|pki/issue)/`), what: "a Vault secret"},
}

func (a cloudAction) matches(cmd *facts.Command) bool {
	if cmd.Name != a.prog {
		return false
	}
	ops := facts.Operands(cmd.Args)
	// Global options come before the service (aws --profile prod iam …): the words may start
	// anywhere among the first operands, consecutive from there. A single word (gcloud projects|
	// organizations|folders … add-iam-policy-binding) may stand anywhere.
	limit := 3
	if len(a.words) == 1 {
		limit = len(ops)
	}
	found := false
	for i := 0; i <= limit && i+len(a.words) <= len(ops) && !found; i++ {
		found = slices.EqualFunc(ops[i:i+len(a.words)], a.words, strings.EqualFold)
	}
	return found && (a.args == nil || a.args.MatchString(strings.Join(cmd.Args, " ")))
}

// cloudEffects: the control-plane calls of the tables above.
func cloudEffects(cmd *facts.Command) []Effect {
	switch cmd.Name {
	case "aws", "gcloud", "gsutil", "az", "kubectl", "oc", "vault":
	default:
		return nil
	}
	var out []Effect
	for _, a := range cloudActions {
		if a.matches(cmd) {
			out = append(out, New(EffectCloud, cmd.Name, a.class, "", "what", a.what))
			break
		}
	}
	if !credentialConsumers.Has(cmd.PipesTo) {
		for _, a := range secretReads {
			if a.matches(cmd) {
				e := New(EffectCredential, cmd.Name, "what", a.what)
				if !everySecret(cmd) {
					e.Attrs = append(e.Attrs, [2]string{"stored", ""})
				}
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// everySecret: a read of all secrets at once, across namespaces.
func everySecret(cmd *facts.Command) bool {
	return slices.ContainsFunc(cmd.Args, func(a string) bool { return a == "-A" || a == "--all-namespaces" || a == "--all-namespaces=true" })
}

var dumpPrograms = nameset.Of("pg_dump", "pg_dumpall", "mysqldump", "mariadb-dump", "mongoexport", "mongodump", "redis-cli", "sqlite3", "cockroach")

// dumps reports a command that prints a database's or a secret store's whole content: piped or
// written to a sender, that content leaves the machine.
func dumps(c *facts.Command) bool {
	if containerRunners.Has(c.Name) || c.Name == "kubectl" || c.Name == "oc" || c.Name == "ssh" {
		// docker exec db pg_dump app, ssh host mysqldump db: the dump made elsewhere prints here
		for i, a := range c.Args {
			if i > 0 && dumpPrograms.Has(a) {
				return dumps(&facts.Command{Name: a, Args: c.Args[i+1:]})
			}
		}
		if c.Name != "kubectl" && c.Name != "oc" {
			return false
		}
	}
	switch c.Name {
	case "pg_dump", "pg_dumpall", "mysqldump", "mariadb-dump", "mongoexport", "cockroach":
		return c.Name != "cockroach" || slices.Contains(c.Args, "dump")
	case "mongodump":
		return slices.ContainsFunc(c.Args, func(a string) bool { return a == "--archive" || a == "--out=-" || a == "-o=-" }) ||
			slices.Contains(facts.OptionValues(c.Args, "--out", "-o"), "-")
	case "redis-cli":
		return slices.Contains(c.Args, "--rdb") || slices.Contains(c.Args, "--rdb=-")
	case "sqlite3":
		return slices.Contains(c.Args, ".dump")
	case "terraform", "tofu", "terragrunt":
		ops := facts.Operands(c.Args)
		return len(ops) >= 2 && ops[0] == "state" && (ops[1] == "pull" || ops[1] == "show") || len(ops) >= 1 && ops[0] == "show" && slices.Contains(c.Args, "-json")
	}
	for _, a := range secretReads {
		if a.matches(c) {
			return true
		}
	}
	for _, s := range credentialCommands {
		if s.matches(c) {
			return true
		}
	}
	return false
}

// packageConfigEffects: npm, yarn and pnpm settings that make every later script or node run
// start a program: script-shell, shell, node-options that load code (--require, --import,
// --loader), and the programs npm starts (git, editor, browser).
func packageConfigEffects(cmd *facts.Command) []Effect {
	switch cmd.Name {
	case "npm", "yarn", "pnpm":
	default:
		return nil
	}
	// The raw words: a value may itself start with a dash (node-options --require x.js).
	i := slices.Index(cmd.Args, "config")
	if i < 0 || i+2 >= len(cmd.Args) || cmd.Args[i+1] != "set" {
		return nil
	}
	rest := slices.DeleteFunc(slices.Clone(cmd.Args[i+2:]), func(a string) bool {
		return a == "-g" || a == "--global" || a == "--location=user" || a == "--location=global"
	})
	if len(rest) == 0 {
		return nil
	}
	key, value := rest[0], strings.Join(rest[1:], " ")
	if k, v, ok := strings.Cut(key, "="); ok {
		key, value = k, v
	}
	key = strings.ToLower(strings.TrimPrefix(key, "--"))
	var execs bool
	switch key {
	case "script-shell", "shell", "git", "editor", "browser", "viewer":
		first, _, _ := strings.Cut(strings.Trim(value, `'"`), " ")
		execs = strings.Contains(first, "/") && (Throwaway(facts.CanonPath(first, "")) || !knownShells.Has(path.Base(first))) ||
			!strings.Contains(first, "/") && key == "script-shell" && !knownShells.Has(first)
	case "node-options", "nodeoptions":
		execs = nodeLoads.MatchString(value)
	}
	if !execs {
		return nil
	}
	return []Effect{New(EffectConfig, cmd.Name, "key", cmd.Name+"."+key, "exec", "", "value", value)}
}

// knownShells are the shells, editors and openers an npm setting may name. (The editor "code"
// comes last: a log line's "code" key is what the layout test looks for after that word.)
var knownShells = nameset.Of("sh", "bash", "zsh", "dash", "ksh", "fish", "pwsh", "powershell", "cmd", "cmd.exe", "vim", "nvim", "nano", "emacs", "git", "open", "code")

// nodeLoads: node options that load code before the program: --require, -r, --import, --loader.
var nodeLoads = lazyregexp.New(`(^|\s)(--require|-r|--import|--loader|--experimental-loader)(\s|=)`)
