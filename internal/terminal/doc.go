// Package terminal keeps bytes that agentbox relays from a sandbox from driving the
// user's terminal. A Writer passes printable text, newlines, tabs, carriage returns
// and SGR colour sequences through and shows every other control character and
// escape sequence as visible text ("\e]52;c;…\a" instead of the bytes ESC ] 5 2 …),
// so that sandboxed code cannot set the clipboard (OSC 52), retitle the window,
// redefine keys, or make the terminal answer a query (\e[6n, \e[c) into the input
// of the user's shell after agentbox exits.
//
// It deliberately does not interpret escape sequences beyond recognising SGR, does
// not judge which SGR parameters are wise, and is not meant for pipes or files:
// callers wrap a destination only when IsTerminal says it is one, so that output to
// anything else stays byte-exact.
package terminal
