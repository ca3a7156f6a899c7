// Package command finds the programs a command line runs, so that a permission
// rule can speak of programs and arguments rather than of strings. Parse takes an
// argv as exec runs it; ParseShell a line as sh -c runs it. Both return the simple
// commands (Simple) the line would run, each an argv of Words, after seeing
// through:
//
//   - shells: sh/bash/dash/zsh/ksh -c STRING (the string is parsed with
//     mvdan.cc/sh: pipelines, && and ||, ;, subshells, blocks, if/for/while/case
//     bodies, command and process substitutions, redirections);
//   - wrappers that run their arguments: env (with -i, -u, -C, -S and NAME=VALUE),
//     nice, nohup, setsid, stdbuf, time, timeout, ionice, chrt, taskset, command,
//     exec, builtin, sudo, doas, su -c, busybox, xargs (whose input adds
//     arguments), and find's -exec, -execdir, -ok and -okdir.
//
// A Word is Literal (its text is exactly the argument), Unknown (one argument whose
// value is known only at run time: "$X", `$'\x67'`, a find {}) or Splat (zero or
// more arguments: an unquoted $X, a glob, a brace expansion, xargs input). A
// Simple is Opaque, with the reason, when the program itself cannot be known: its
// name is not literal, it comes from standard input (sh -s, bash <<EOF,
// curl … | sh), it is defined in the line (a function, an alias),
// it is evaluated (eval, source, ., trap), or an assignment changes what a name
// runs (PATH=, LD_PRELOAD=, BASH_ENV=, GIT_SSH_COMMAND=, git -c core.pager=…).
//
// A Pattern is what a rule or a grant writes: "go test **", "git push **",
// "npm install". Its first word matches the program's base name (or, with a '/',
// its path); the others are globs over one argument each ('*' any run of
// characters, '?' one), "*" alone is any one argument and "**" any number of them.
// Match asks one of two questions: Must (does every run of this line match: for
// allow rules and grants) or May (could some run match: for ask and deny rules).
// An Unknown word is matched by any glob under May and only by "*" or "**" under
// Must; a Splat only by "**" under Must. An opaque Simple is matched under Must by
// the pattern "**" alone and under May by nothing: what it runs cannot be named,
// so the caller gives it the risk of an unknown command instead.
//
// What an argv pattern can promise, and what it cannot: a rule "deny git push **"
// refuses every line in which git push is run in a way this package can see, with
// any wrappers and shell composition above. It does not stop a program from doing
// what git push does: a script, a Makefile target, a test, `python -c`, an alias
// in a config file, a binary named differently. Allowing "go test **" allows
// whatever the tests do. What a program does is bounded by the sandbox and its
// egress, not by its name. Globs in arguments are matched before the shell
// expands them (the word "*.go" is a Splat, never the files it names).
//
// It deliberately does not run, expand or resolve anything: no environment, no
// file system, no PATH lookup.
package command
