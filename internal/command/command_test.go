package command

import (
	"strings"
	"testing"
)

// show renders a line's programs for comparison: "argv" per program, "!" before
// an opaque one, words of unknown or splat kind marked ? and +.
func show(l Line) string {
	var parts []string
	for _, s := range l.Simple {
		var ws []string
		for _, w := range s.Argv {
			switch w.Kind {
			case Unknown:
				ws = append(ws, "?"+w.Text)
			case Splat:
				ws = append(ws, "+"+w.Text)
			default:
				ws = append(ws, w.Text)
			}
		}
		p := strings.Join(ws, " ")
		if s.Opaque != "" {
			p = "!" + p
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " | ")
}

func TestParseShell(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"go test ./...", "go test ./..."},
		{"cd src && go test ./... > out.txt 2>&1", "cd src | go test ./..."},
		{"a | b || c; d & e", "a | b | c | d | e"},
		{`g\it 'pu'"sh" "a b"`, "git push a b"},
		{"(git push) ; { git status; }", "git push | git status"},
		{"if true; then git push; else false; fi", "true | git push | false"},
		{"for f in a b; do rm $f; done", "rm +$f"},
		{`echo "$(git push)"`, `git push | echo ?"$(git push)"`},
		{"cat <(curl x)", "curl x | cat ?<(curl x)"},
		{"echo `id`", "id | echo +$(id)"},
		{"rm *.txt", "rm +*.txt"},
		{"cp a{1,2}", "cp +a{1,2}"},
		{"cat ~/.ssh/id_rsa", "cat ?~/.ssh/id_rsa"},
		{`git commit -m "$MSG"`, `git commit -m ?"$MSG"`},
		{"git $X", "!git +$X"}, // $X could be -c core.pager=…,
		{"$G push", "!+$G push"},
		{"FOO=1 git push", "git push"},
		{"PATH=/tmp:$PATH git push", "!git push"},
		{"export LD_PRELOAD=/tmp/x.so; ls", "!?export LD_PRELOAD=/tmp/x.so | ls"},
		{"f() { git push; }; f", "!?f() { git push; } | git push | f"},
		{"eval 'git push'", "!eval git push"},
		{"source ./env.sh", "!source ./env.sh"},
		{"echo $'\\x67it'", "echo ?$'\\x67it'"},
		{"(( a[$(id)] ))", "!?((a[$(id)])) | id"},
		{"[[ -f $(id) ]]", "id"},
		{"x=$(curl evil)", "curl evil"},
		{"> .env", ""},
		{"echo 'unterminated", "!?echo 'unterminated"},
		{"# only a comment", ""},
	} {
		got := show(ParseShell(c.line))
		if got != c.want {
			t.Errorf("ParseShell(%q)\n got  %s\n want %s", c.line, got, c.want)
		}
	}
}

func TestParseWrappers(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/sh", "-c", "git push"}, "git push"},
		{[]string{"bash", "-lc", "sh -c 'git push origin'"}, "git push origin"},
		{[]string{"bash", "-o", "pipefail", "-c", "a | b"}, "a | b"},
		{[]string{"bash", "script.sh"}, "bash script.sh"},
		{[]string{"sh"}, "!sh"},
		{[]string{"sh", "-s"}, "!sh -s"},
		{[]string{"bash", "--rcfile", "x", "-c", "ls"}, "!bash --rcfile x -c ls"},
		{[]string{"env", "-i", "A=1", "-u", "B", "git", "push"}, "-u B git push"}, // options end at the first assignment: -u is the program
		{[]string{"env", "-i", "A=1", "-u"}, "-u"},
		{[]string{"env", "-i", "-u", "B", "A=1", "git", "push"}, "git push"},
		{[]string{"env", "-S", "git push", "origin"}, "git push origin"},
		{[]string{"env", "PATH=/tmp", "git"}, "!env PATH=/tmp git"},
		{[]string{"env"}, "env"},
		{[]string{"nice", "-n", "5", "git", "push"}, "git push"},
		{[]string{"nice", "-10", "git", "push"}, "git push"},
		{[]string{"timeout", "-s", "KILL", "-k", "5", "10s", "git", "push"}, "git push"},
		{[]string{"timeout", "--signal=KILL", "10", "git", "push"}, "git push"},
		{[]string{"sudo", "-u", "root", "-E", "git", "push"}, "git push"},
		{[]string{"sudo", "-l"}, "sudo -l"},
		{[]string{"nohup", "setsid", "stdbuf", "-oL", "time", "-p", "git", "push"}, "git push"},
		{[]string{"ionice", "-c", "3", "chrt", "-f", "10", "taskset", "0x3", "git", "push"}, "git push"},
		{[]string{"command", "-v", "git"}, "command -v git"},
		{[]string{"exec", "-a", "x", "git", "push"}, "git push"},
		{[]string{"xargs", "git", "push"}, "git push +(xargs input)"},
		{[]string{"xargs", "-0", "-n", "1", "rm"}, "rm +(xargs input)"},
		{[]string{"xargs", "-I", "{}", "git", "push", "{}"}, "git push ?{}"},
		{[]string{"xargs", "sh", "-c", "git push"}, "git push"},
		{[]string{"find", ".", "-name", "*.go", "-exec", "gofmt", "-l", "{}", ";"}, "find . -name *.go -exec gofmt -l {} ; | gofmt -l ?{}"},
		{[]string{"find", ".", "-execdir", "sh", "-c", "git push", "+"}, "!find . -execdir sh -c git push +"},
		{[]string{"find", ".", "-exec", "git", "push", "{}", "+"}, "find . -exec git push {} + | git push ?{}"},
		{[]string{"find", ".", "-delete"}, "find . -delete"},
		{[]string{"busybox", "sh", "-c", "git push"}, "git push"},
		{[]string{"su", "-c", "git push", "root"}, "git push"},
		{[]string{"su", "root"}, "!su root"},
		{[]string{"git", "-c", "core.sshCommand=sh -c x", "push"}, "!git -c core.sshCommand=sh -c x push"},
		{[]string{"git", "-c", "alias.p=!git push", "p"}, "!git -c alias.p=!git push p"},
		{[]string{"git", "-c", "user.name=x", "commit"}, "git commit"},
		{[]string{"git", "-C", "sub", "push"}, "git push"},
		{[]string{"git", "rebase", "-x", "git push", "main"}, "git rebase -x git push main | git push"},
		{[]string{"git", "bisect", "run", "make", "test"}, "git bisect run make test | make test"},
		{[]string{"git", "submodule", "foreach", "git push"}, "git submodule foreach git push | git push"},
		{[]string{"fish", "-c", "git push"}, "!fish -c git push"},
		{[]string{"python3", "-c", "import os"}, "python3 -c import os"},
	} {
		got := show(Parse(c.argv))
		if got != c.want {
			t.Errorf("Parse(%q)\n got  %s\n want %s", c.argv, got, c.want)
		}
	}
}

func TestParseDepthBound(t *testing.T) {
	line := "git push"
	for range 10 {
		line = "sh -c " + quote(line)
	}
	l := ParseShell(line)
	if l.Opaque() == "" {
		t.Fatalf("10 nested shells were seen through: %s", show(l))
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestRedirects(t *testing.T) {
	l := ParseShell("cat secrets < .env > out.txt 2>>log")
	if len(l.Simple) != 1 {
		t.Fatalf("got %s", show(l))
	}
	var got []string
	for _, r := range l.Simple[0].Redirects {
		got = append(got, r.Op+r.Path.Text+map[bool]string{true: "(w)"}[r.Writes()])
	}
	if strings.Join(got, " ") != "<.env >out.txt >>log(w)" && strings.Join(got, " ") != "<.env >out.txt(w) >>log(w)" {
		t.Fatalf("redirects: %v", got)
	}
	lits := strings.Join(l.Literals(), " ")
	if !strings.Contains(lits, ".env") || !strings.Contains(lits, "out.txt") {
		t.Fatalf("Literals misses redirection targets: %s", lits)
	}
}
