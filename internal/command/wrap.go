package command

import (
	"path"
	"strings"
)

// maxDepth bounds nested shells and wrappers (sh -c "env sh -c '…'").
const maxDepth = 8

// Parse returns what an argv runs, as exec would run it (no shell unless argv
// names one).
func Parse(argv []string) Line {
	words := make([]Word, len(argv))
	for i, a := range argv {
		words[i] = lit(a)
	}
	return Line{Simple: unwrap(words, nil, 0)}
}

func opaque(argv []Word, via []string, why string) []Simple {
	return []Simple{{Argv: argv, Via: via, Opaque: why}}
}

func with(via []string, s string) []string { return append(append([]string(nil), via...), s) }

// unwrap returns the programs an argv runs: itself, or what a shell or wrapper at
// its head runs.
func unwrap(argv []Word, via []string, depth int) []Simple {
	if len(argv) == 0 {
		return nil
	}
	if depth > maxDepth {
		return opaque(argv, via, "shells and wrappers nested too deeply")
	}
	if argv[0].Kind != Literal {
		return opaque(argv, via, "the program's name is known only at run time: "+argv[0].Text)
	}
	name := path.Base(argv[0].Text)
	if shells[name] {
		return shellArgv(name, argv, via, depth)
	}
	switch name {
	case "env":
		return envArgv(argv, via, depth)
	case "find":
		return findArgv(argv, via, depth)
	case "git":
		return gitArgv(argv, via, depth)
	case "su":
		return suArgv(argv, via, depth)
	case "busybox":
		if len(argv) > 1 {
			return unwrap(argv[1:], with(via, "busybox"), depth+1)
		}
	case "eval", "source", ".", "trap", "alias":
		return opaque(argv, via, name+" runs code given as text")
	case "fish", "xonsh", "nu", "pwsh", "powershell", "tclsh", "expect":
		return opaque(argv, via, name+" is a shell whose language is not parsed")
	}
	if w, ok := wrappers[name]; ok {
		return w.unwrap(name, argv, via, depth)
	}
	return []Simple{{Argv: argv, Via: via}}
}

// wrapper describes a program that runs its operands as a command.
type wrapper struct {
	shortArg   string   // short options that take an argument
	longArg    []string // long options that take an argument
	positional int      // operands before the command (timeout's duration)
	noCommand  string   // short options after which the operands are not a command
	appendArgs bool     // the program appends arguments of its own (xargs)
	digitOpt   bool     // -N is an option (nice -10)
}

var wrappers = map[string]wrapper{
	"nice":    {shortArg: "n", longArg: []string{"adjustment"}, digitOpt: true},
	"nohup":   {},
	"setsid":  {},
	"stdbuf":  {shortArg: "ioe", longArg: []string{"input", "output", "error"}},
	"time":    {shortArg: "fo", longArg: []string{"format", "output"}},
	"timeout": {shortArg: "sk", longArg: []string{"signal", "kill-after"}, positional: 1},
	"ionice":  {shortArg: "cnP", longArg: []string{"class", "classdata", "pgid", "uid"}, noCommand: "pPu"},
	"chrt":    {shortArg: "TPD", longArg: []string{"sched-runtime", "sched-period", "sched-deadline"}, positional: 1, noCommand: "pm"},
	"taskset": {positional: 1, noCommand: "p"},
	"command": {noCommand: "vV"},
	"exec":    {shortArg: "a"},
	"builtin": {},
	"sudo": {shortArg: "ugCDhprtUTR", longArg: []string{"user", "group", "close-from", "chdir", "host", "prompt",
		"role", "type", "other-user", "command-timeout", "chroot"}, noCommand: "lKkVv"},
	"doas":     {shortArg: "uC", noCommand: "s"},
	"xargs":    {shortArg: "adEILlnPs", longArg: []string{"arg-file", "delimiter", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"}, appendArgs: true},
	"flock":    {shortArg: "wEc", longArg: []string{"timeout", "conflict-exit-code", "command"}, positional: 1},
	"unbuffer": {},
}

// options skips the options of a wrapper. It returns the index of the first
// operand, the short option letters seen, the value of xargs's replace string, and
// false if an option is not literal.
func (w wrapper) options(argv []Word) (at int, seen string, replace string, ok bool) {
	for at = 1; at < len(argv); at++ {
		a := argv[at]
		if a.Kind != Literal {
			return at, seen, replace, false
		}
		t := a.Text
		if t == "--" {
			return at + 1, seen, replace, true
		}
		if !strings.HasPrefix(t, "-") || t == "-" {
			return at, seen, replace, true
		}
		if long, ok := strings.CutPrefix(t, "--"); ok {
			name, _, hasValue := strings.Cut(long, "=")
			if name == "replace" {
				replace = "{}"
				if hasValue {
					_, replace, _ = strings.Cut(long, "=")
				}
			}
			if !hasValue && contains(w.longArg, name) {
				at++
			}
			continue
		}
		cluster := t[1:]
		if w.digitOpt && strings.Trim(cluster, "0123456789") == "" {
			continue
		}
		for i := 0; i < len(cluster); i++ {
			c := cluster[i]
			seen += string(c)
			if strings.IndexByte(w.shortArg, c) < 0 {
				continue
			}
			value := cluster[i+1:]
			if value == "" && at+1 < len(argv) {
				at++
				if argv[at].Kind != Literal {
					return at, seen, replace, false
				}
				value = argv[at].Text
			}
			if c == 'I' {
				replace = value
			}
			break
		}
	}
	return at, seen, replace, true
}

func (w wrapper) unwrap(name string, argv []Word, via []string, depth int) []Simple {
	at, seen, replace, ok := w.options(argv)
	if !ok {
		return opaque(argv, via, "the options of "+name+" are known only at run time")
	}
	if strings.ContainsAny(seen, w.noCommand) && w.noCommand != "" {
		return []Simple{{Argv: argv, Via: via}}
	}
	if name == "sudo" && strings.ContainsAny(seen, "e") {
		return []Simple{{Argv: argv, Via: via}} // sudoedit: edits its operands
	}
	at += w.positional
	if at >= len(argv) {
		return []Simple{{Argv: argv, Via: via}}
	}
	if name == "flock" && strings.ContainsAny(seen, "c") {
		// flock FILE -c STRING: the command is a shell string.
		return opaque(argv, via, "flock -c runs a shell string")
	}
	rest := append([]Word(nil), argv[at:]...)
	if w.appendArgs {
		switch {
		case replace != "":
			for i, a := range rest {
				if i > 0 && a.Kind == Literal && strings.Contains(a.Text, replace) {
					rest[i] = Word{Text: a.Text, Kind: Unknown}
				}
			}
		default:
			rest = append(rest, Word{Text: "(" + name + " input)", Kind: Splat})
		}
	}
	return unwrap(rest, with(via, name), depth+1)
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// shells are the programs whose -c operand is a shell line.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ash": true,
	"mksh": true, "posh": true, "yash": true, "rbash": true}

// shellArgv handles sh [options] -c STRING [NAME [ARG…]] and its script and stdin
// forms.
func shellArgv(name string, argv []Word, via []string, depth int) []Simple {
	command := false
	at := 1
	for ; at < len(argv); at++ {
		a := argv[at]
		if a.Kind != Literal {
			return opaque(argv, via, "the options of "+name+" are known only at run time")
		}
		t := a.Text
		if t == "--" || t == "-" {
			at++
			break
		}
		if strings.HasPrefix(t, "--") {
			if t == "--rcfile" || t == "--init-file" {
				return opaque(argv, via, name+" "+t+" runs a file")
			}
			continue
		}
		if !strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "+") {
			break
		}
		for _, c := range t[1:] {
			switch c {
			case 'c':
				command = true
			case 's':
				return opaque(argv, via, name+" -s reads its commands from standard input")
			case 'o', 'O':
				at++ // takes an argument
			}
		}
	}
	if !command {
		if at < len(argv) {
			// A script named on the command line is a program like ./script.sh:
			// what it runs is no more visible either way.
			return []Simple{{Argv: argv, Via: via}}
		}
		return opaque(argv, via, name+" reads its commands from standard input")
	}
	if at >= len(argv) {
		return opaque(argv, via, name+" -c has no command string")
	}
	if argv[at].Kind != Literal {
		return opaque(argv, via, name+" -c runs a string known only at run time: "+argv[at].Text)
	}
	return shell(argv[at].Text, with(via, name+" -c"), depth+1)
}

// envArgv handles env [options] [NAME=VALUE…] [COMMAND [ARG…]].
func envArgv(argv []Word, via []string, depth int) []Simple {
	at := 1
	for ; at < len(argv); at++ {
		a := argv[at]
		if a.Kind != Literal {
			return opaque(argv, via, "the arguments of env are known only at run time")
		}
		t := a.Text
		switch {
		case t == "--":
			at++
		case t == "-" || t == "-i" || t == "-0" || t == "-v" || t == "--ignore-environment" || t == "--null" || t == "--debug":
			continue
		case t == "-u" || t == "--unset" || t == "-C" || t == "--chdir":
			at++
			continue
		case strings.HasPrefix(t, "--unset=") || strings.HasPrefix(t, "--chdir=") ||
			(strings.HasPrefix(t, "-u") || strings.HasPrefix(t, "-C")) && len(t) > 2:
			continue
		case t == "-S" || t == "--split-string" || strings.HasPrefix(t, "-S") || strings.HasPrefix(t, "--split-string="):
			s := strings.TrimPrefix(strings.TrimPrefix(t, "--split-string="), "-S")
			if s == "" || t == "--split-string" {
				if at+1 >= len(argv) || argv[at+1].Kind != Literal {
					return opaque(argv, via, "env -S splits a string known only at run time")
				}
				at++
				s = argv[at].Text
			}
			words, ok := splitWords(s)
			if !ok {
				return opaque(argv, via, "env -S splits a string this package cannot")
			}
			rest := append(words, argv[at+1:]...)
			return envArgv(append([]Word{lit("env")}, rest...), via, depth+1)
		case strings.HasPrefix(t, "-"):
			return opaque(argv, via, "env option "+t+" is not known")
		}
		break
	}
	for ; at < len(argv); at++ {
		name, _, ok := strings.Cut(argv[at].Text, "=")
		if !ok || argv[at].Kind != Literal || !isName(name) {
			break
		}
		if why := dangerousVar(name); why != "" {
			return opaque(argv, via, why)
		}
	}
	if at >= len(argv) {
		return []Simple{{Argv: argv, Via: via}}
	}
	return unwrap(argv[at:], with(via, "env"), depth+1)
}

// findArgv lists find itself and every command its -exec, -execdir, -ok and -okdir
// actions run, with {} an Unknown path.
func findArgv(argv []Word, via []string, depth int) []Simple {
	out := []Simple{{Argv: argv, Via: via}}
	for i := 1; i < len(argv); i++ {
		t := argv[i].Text
		if argv[i].Kind != Literal || (t != "-exec" && t != "-execdir" && t != "-ok" && t != "-okdir") {
			continue
		}
		end := -1
		for j := i + 1; j < len(argv); j++ {
			if argv[j].Kind == Literal && (argv[j].Text == ";" || argv[j].Text == "+" && j > i+1 && argv[j-1].Text == "{}") {
				end = j
				break
			}
		}
		if end < 0 {
			return opaque(argv, via, "find "+t+" is not terminated by ';' or '{} +'")
		}
		sub := make([]Word, 0, end-i-1)
		for _, w := range argv[i+1 : end] {
			if w.Kind == Literal && strings.Contains(w.Text, "{}") {
				w = Word{Text: w.Text, Kind: Unknown}
			}
			sub = append(sub, w)
		}
		out = append(out, unwrap(sub, with(via, "find "+t), depth+1)...)
		i = end
	}
	return out
}

// suArgv handles su [options] [-c COMMAND] [USER].
func suArgv(argv []Word, via []string, depth int) []Simple {
	for i := 1; i < len(argv); i++ {
		t := argv[i].Text
		if argv[i].Kind != Literal {
			return opaque(argv, via, "the arguments of su are known only at run time")
		}
		if (t == "-c" || t == "--command") && i+1 < len(argv) {
			if argv[i+1].Kind != Literal {
				return opaque(argv, via, "su -c runs a string known only at run time")
			}
			return shell(argv[i+1].Text, with(via, "su -c"), depth+1)
		}
		if v, ok := strings.CutPrefix(t, "--command="); ok {
			return shell(v, with(via, "su -c"), depth+1)
		}
	}
	return opaque(argv, via, "su starts a shell")
}

// gitExecKeys are git configuration keys whose value git runs as a command.
var gitExecKeys = []string{"core.pager", "core.sshcommand", "core.editor", "core.fsmonitor", "core.hookspath",
	"core.askpass", "core.gitproxy", "sequence.editor", "diff.external", "gpg.program", "uploadpack.packobjectshook",
	"pager.", "alias.", "filter.", "credential.", "include.path", "includeif."}

func gitExecKey(key string) bool {
	key = strings.ToLower(key)
	for _, k := range gitExecKeys {
		if key == k || strings.HasSuffix(k, ".") && strings.HasPrefix(key, k) {
			return true
		}
	}
	for _, suffix := range []string{".textconv", ".driver", ".program", ".command", ".cmd", ".helper", ".tool", ".path"} {
		if strings.HasSuffix(key, suffix) {
			return true
		}
	}
	return false
}

// gitArgv lists git, refusing to see through configuration that runs commands, and
// adds the commands that bisect run, rebase --exec and submodule foreach run.
func gitArgv(argv []Word, via []string, depth int) []Simple {
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		t := a.Text
		if a.Kind != Literal {
			return opaque(argv, via, "git's arguments are known only at run time: "+t)
		}
		if !strings.HasPrefix(t, "-") {
			break
		}
		switch {
		case t == "-c" && i+1 < len(argv):
			i++
			kv := argv[i]
			key, _, _ := strings.Cut(kv.Text, "=")
			if kv.Kind != Literal || gitExecKey(key) {
				return opaque(argv, via, "git -c "+key+" makes git run a configured command")
			}
		case strings.HasPrefix(t, "--config-env"):
			return opaque(argv, via, "git --config-env sets configuration from the environment")
		case strings.HasPrefix(t, "--exec-path="):
			return opaque(argv, via, "git --exec-path runs git commands from another directory")
		case t == "-C" || t == "--git-dir" || t == "--work-tree" || t == "--namespace" || t == "--super-prefix":
			i++
			if i < len(argv) && argv[i].Kind != Literal {
				return opaque(argv, via, "git's arguments are known only at run time: "+argv[i].Text)
			}
		}
	}
	// Global options go to Via, so that a pattern sees "git push" in "git -C sub
	// --no-pager push".
	self := Simple{Argv: append([]Word{argv[0]}, argv[i:]...), Via: via}
	if i > 1 {
		var g []string
		for _, w := range argv[:i] {
			g = append(g, w.Text)
		}
		self.Via = with(via, strings.Join(g, " "))
	}
	out := []Simple{self}
	if i >= len(argv) {
		return out
	}
	sub, rest := argv[i].Text, argv[i+1:]
	v := with(via, "git "+sub)
	switch sub {
	case "bisect":
		if len(rest) > 1 && rest[0].Text == "run" {
			out = append(out, unwrap(rest[1:], v, depth+1)...)
		}
	case "rebase":
		for j := 0; j < len(rest); j++ {
			t := rest[j].Text
			if (t == "-x" || t == "--exec") && j+1 < len(rest) {
				j++
				if rest[j].Kind != Literal {
					return opaque(argv, via, "git rebase --exec runs a string known only at run time")
				}
				out = append(out, shell(rest[j].Text, v, depth+1)...)
			} else if s, ok := strings.CutPrefix(t, "--exec="); ok {
				out = append(out, shell(s, v, depth+1)...)
			}
		}
	case "submodule":
		for j := 0; j < len(rest); j++ {
			if rest[j].Text == "foreach" && j+1 < len(rest) {
				last := rest[len(rest)-1]
				if last.Kind != Literal {
					return opaque(argv, via, "git submodule foreach runs a string known only at run time")
				}
				out = append(out, shell(last.Text, v, depth+1)...)
				break
			}
		}
	}
	return out
}

// dangerousVar says why an assignment to name changes what a command line runs,
// or "" if it does not.
func dangerousVar(name string) string {
	switch name {
	case "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH",
		"GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER", "GIT_EDITOR", "EDITOR", "VISUAL",
		"GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXEC_PATH", "GIT_PROXY_COMMAND", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
		"GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_TEMPLATE_DIR",
		"PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
		"NODE_OPTIONS", "NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "GOFLAGS", "LESSOPEN", "MANPAGER":
		return "setting " + name + " changes what the command runs"
	}
	for _, p := range []string{"LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"} {
		if strings.HasPrefix(name, p) {
			return "setting " + name + " changes what the command runs"
		}
	}
	return ""
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
