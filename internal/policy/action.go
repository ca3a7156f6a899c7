package policy

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/secret"
)

// Action is what the policy knows of one tool call. The integration fills it from
// the tool's Spec and decoded arguments (the package doc lists each built-in tool).
type Action struct {
	Tool   string `json:"tool"`
	Server string `json:"server,omitempty"` // the MCP server of a mounted tool; "" for a built-in
	Effect Effect `json:"effect"`
	Hints  Hints  `json:"hints"`
	// Reads and Writes are the workspace paths the call reads and changes.
	Reads  []string `json:"reads,omitempty"`
	Writes []string `json:"writes,omitempty"`
	// Deletes counts the files the call removes.
	Deletes int `json:"deletes,omitempty"`
	// Command is the command line an exec call runs (command.Parse or ParseShell).
	Command *command.Line `json:"command,omitempty"`
	// Network says an exec call's sandbox can reach some host (its egress allows
	// one); without it, hosts a command names cannot be reached and are not needs.
	Network bool `json:"network,omitempty"`
	// URL and Method are a network tool's request.
	URL    string `json:"url,omitempty"`
	Method string `json:"method,omitempty"`
	// Payload is what the call sends beyond the sandbox (a request's headers and
	// body, an MCP tool's arguments), scanned for secrets; it is not recorded.
	Payload string `json:"-"`
}

// manyFiles is the count of deletions from which a write reaches a tree.
const manyFiles = 10

// atom is one need with what rules and the risk function see of it.
type atom struct {
	need     Need
	effect   Effect
	class    secret.Class
	scope    Scope
	rev      Reversibility
	dest     Destination
	network  bool
	outgoing bool   // sends data beyond the sandbox: a tainted session needs a release
	refuse   string // a need no rule or grant can allow, and why
	trait    string
}

// atoms breaks an action into its needs.
func (a Action) atoms(c Context) []atom {
	var out []atom
	rev := Recoverable
	if c.Overlay {
		rev = Reversible
	}
	for _, p := range a.Reads {
		out = append(out, pathAtom(KindRead, Read, p, Reversible))
	}
	for _, p := range a.Writes {
		at := pathAtom(KindWrite, Write, p, rev)
		if a.Deletes >= manyFiles && at.scope == ScopeFile {
			at.scope = ScopeTree
		}
		out = append(out, at)
	}
	if a.Command != nil {
		out = append(out, a.commandAtoms(c, rev)...)
	}
	if a.URL != "" {
		out = append(out, a.urlAtom(c))
	}
	if a.Server != "" {
		out = append(out, a.mcpAtom())
	}
	if a.Effect == Control && len(out) == 0 {
		out = append(out, atom{need: Need{Kind: KindControl}, effect: Control, class: secret.Project,
			scope: ScopeFile, rev: Reversible, dest: DestNone})
	}
	if len(out) == 0 {
		// A tool the policy knows nothing of beyond its name and effect.
		at := atom{need: Need{Kind: KindTool, Tool: a.Tool}, effect: a.Effect, class: payloadClass(a.Payload, secret.Project),
			scope: ScopeUnknown, rev: Unknown, dest: DestNone}
		if a.Effect == Network {
			at.dest, at.network, at.outgoing = DestOther, true, true
		}
		out = append(out, at)
	}
	return out
}

func pathAtom(k Kind, e Effect, p string, rev Reversibility) atom {
	clean, ok := CleanPath(p)
	if !ok {
		return atom{need: Need{Kind: k, Path: p}, effect: e, class: secret.ClassOf(p), scope: ScopeUnknown, rev: rev,
			dest: DestNone, refuse: "the path " + strconv.Quote(p) + " is outside the workspace"}
	}
	class := secret.ClassOf(clean)
	if k == KindRead && class.Sensitive() {
		k = KindSensitiveRead
	}
	scope := ScopeFile
	switch {
	case clean == ".git" || strings.HasPrefix(clean, ".git/"):
		scope = ScopeRepository
	case clean == "." || strings.ContainsAny(clean, "*?[{"):
		scope = ScopeTree
	}
	return atom{need: Need{Kind: k, Path: clean}, effect: e, class: class, scope: scope, rev: rev, dest: DestNone}
}

// commandAtoms: one exec need per program; a sensitive:read need per sensitive
// path the line names; a write need per workspace file a redirection writes; a
// network need per host a program names, if the sandbox has network.
func (a Action) commandAtoms(c Context, rev Reversibility) []atom {
	var out []atom
	class := secret.Project
	for _, w := range words(*a.Command) {
		if r, ok := secret.Path(strings.TrimLeft(w, "@<>=")); ok {
			class = secret.Max(class, r.Class)
		}
		if sc, ok := secret.Classify(w); ok {
			class = secret.Max(class, sc)
		}
	}
	dest := DestNone
	if a.Network {
		dest = DestAllowlisted
	}
	seen := map[string]bool{}
	for _, s := range a.Command.Simple {
		s := s
		at := atom{need: Need{Kind: KindExec, Command: &s}, effect: Exec, class: class, scope: ScopeTree,
			rev: rev, dest: dest, network: a.Network, outgoing: a.Network}
		if a.Network {
			at.rev = Recoverable
		}
		if s.Opaque != "" {
			at.scope = ScopeUnknown
			if a.Network {
				at.rev = Unknown
			}
		} else if t, ok := traitOf(s); ok {
			at.scope, at.trait = t.scope, t.rule
			if revRank(t.rev) > revRank(at.rev) {
				at.rev = t.rev
			}
		}
		out = append(out, at)
		for _, w := range s.Argv {
			p := strings.TrimLeft(w.Text, "@<>=")
			if r, ok := secret.Path(p); ok && !seen[p] {
				seen[p] = true
				need := Need{Kind: KindSensitiveRead, Path: p}
				if cp, ok := CleanPath(p); ok {
					need.Path = cp
				}
				out = append(out, atom{need: need, effect: Read, class: r.Class, scope: ScopeFile, rev: Reversible, dest: DestNone})
			}
		}
		for _, r := range s.Redirects {
			if !r.Writes() || r.Path.Kind != command.Literal {
				continue
			}
			if cp, ok := CleanPath(r.Path.Text); ok {
				out = append(out, pathAtom(KindWrite, Write, cp, rev))
			}
		}
		if a.Network {
			for _, h := range hostsOf(s) {
				if seen["host:"+h.host] {
					continue
				}
				seen["host:"+h.host] = true
				out = append(out, atom{need: Need{Kind: KindNetwork, Host: h.host, Port: h.port}, effect: Network,
					class: class, scope: ScopeExternal, rev: Unknown, dest: c.destination(h.host, h.port),
					network: true, outgoing: true, trait: at.trait})
			}
		}
	}
	return out
}

func revRank(r Reversibility) int {
	return map[Reversibility]int{Reversible: 0, Recoverable: 1, Unknown: 2, Irreversible: 3}[r]
}

// words returns the text of every word of a line, known or not, for classifying
// what it touches ("$HOME/.ssh/id_rsa" names .ssh whatever HOME is).
func words(l command.Line) []string {
	var out []string
	for _, s := range l.Simple {
		for _, w := range s.Argv {
			out = append(out, w.Text)
		}
		for _, r := range s.Redirects {
			out = append(out, r.Path.Text)
		}
	}
	return out
}

type hostPortPair struct {
	host string
	port uint16
}

// netPrograms take a bare host as an operand.
var netPrograms = map[string]bool{"curl": true, "wget": true, "http": true, "https": true, "xh": true, "nc": true,
	"ncat": true, "netcat": true, "telnet": true, "ssh": true, "scp": true, "sftp": true, "rsync": true, "ftp": true}

// hostsOf returns the hosts a program names: URLs in any argument, git's and scp's
// user@host:path, and bare hosts given to curl, wget, ssh and the like.
func hostsOf(s command.Simple) []hostPortPair {
	var out []hostPortPair
	bare := netPrograms[s.Name()]
	for i, w := range s.Argv {
		if i == 0 || w.Kind != command.Literal || strings.HasPrefix(w.Text, "-") {
			continue
		}
		if h, ok := hostOfURL(w.Text, bare); ok {
			out = append(out, h)
		}
	}
	return out
}

func hostOfURL(s string, bare bool) (hostPortPair, bool) {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		return canonical(u.Hostname(), u.Port(), u.Scheme)
	}
	// user@host:path (git, scp, rsync)
	if at := strings.IndexByte(s, '@'); at > 0 {
		if colon := strings.IndexByte(s[at:], ':'); colon > 0 {
			return canonical(s[at+1:at+colon], "", "ssh")
		}
	}
	if bare && strings.Contains(s, ".") && !strings.ContainsAny(s, "/=") {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			host, port = s, ""
		}
		return canonical(host, port, "http")
	}
	return hostPortPair{}, false
}

func canonical(host, port, scheme string) (hostPortPair, bool) {
	h, err := CanonicalHost(host)
	if err != nil {
		return hostPortPair{}, false
	}
	p := uint16(0)
	if n, err := strconv.ParseUint(port, 10, 16); err == nil {
		p = uint16(n)
	} else {
		p = map[string]uint16{"https": 443, "http": 80, "ssh": 22, "git": 9418, "ftp": 21, "wss": 443, "ws": 80}[scheme]
	}
	return hostPortPair{h, p}, true
}

// safeMethods change nothing at the server, by HTTP's definition.
var safeMethods = map[string]bool{"": true, "GET": true, "HEAD": true, "OPTIONS": true}

func (a Action) urlAtom(c Context) atom {
	at := atom{effect: Network, scope: ScopeExternal, network: true, outgoing: true, dest: DestOther,
		class: payloadClass(a.Payload, secret.Public)}
	at.rev = Irreversible
	if safeMethods[strings.ToUpper(a.Method)] {
		at.rev = Reversible
	}
	u, err := url.Parse(a.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		at.need = Need{Kind: KindNetwork, Host: a.URL}
		at.refuse = "the URL " + strconv.Quote(a.URL) + " is not an absolute http or https URL"
		return at
	}
	if u.RawQuery != "" || u.User != nil {
		// The query and userinfo are sent too.
		at.class = payloadClass(u.RawQuery+" "+u.User.String(), at.class)
	}
	h, ok := canonical(u.Hostname(), u.Port(), u.Scheme)
	if !ok {
		at.need = Need{Kind: KindNetwork, Host: u.Hostname()}
		at.refuse = "the host " + strconv.Quote(u.Hostname()) + " is not a host name (addresses are refused, as the egress proxy refuses them)"
		return at
	}
	at.need = Need{Kind: KindNetwork, Host: h.host, Port: h.port}
	at.dest = c.destination(h.host, h.port)
	return at
}

// payloadClass is the class of what a call sends: project data if it sends
// anything, more if it holds a secret's shape.
func payloadClass(p string, empty secret.Class) secret.Class {
	if strings.TrimSpace(p) == "" {
		return empty
	}
	c := secret.Project
	if sc, ok := secret.Classify(p); ok {
		c = secret.Max(c, sc)
	}
	return secret.Max(c, empty)
}

// mcpAtom is a mounted tool's need. Its hints are a server's claims: they can make
// it stricter (a claimed destructive tool is irreversible), never looser.
func (a Action) mcpAtom() atom {
	at := atom{need: Need{Kind: KindTool, Tool: a.Tool}, effect: a.Effect, scope: ScopeExternal,
		class: payloadClass(a.Payload, secret.Project), dest: DestAllowlisted}
	trusted := a.Hints.Trusted
	open := !trusted || hintList[3].value(a.Hints)
	if open {
		at.effect, at.network, at.outgoing = Network, true, true
	}
	switch {
	case trusted && hintList[0].value(a.Hints):
		at.rev = Reversible
	case trusted && !hintList[1].value(a.Hints):
		at.rev = Recoverable
	case a.Hints.Destructive != nil && *a.Hints.Destructive, trusted:
		at.rev = Irreversible
	default:
		at.rev = Unknown
	}
	return at
}
