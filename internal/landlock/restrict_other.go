//go:build !linux

package landlock

// ABI returns 0: Landlock is Linux only.
func ABI() int { return 0 }

// Restrict returns ErrUnsupported: Landlock is Linux only, and BestEffort does not
// make a sandbox on another platform acceptable.
func Restrict(r Ruleset) (Applied, error) { return Applied{}, ErrUnsupported }

// Preview returns ErrUnsupported: Landlock is Linux only.
func Preview(r Ruleset) (Applied, error) { return Applied{}, ErrUnsupported }

// Exec returns ErrUnsupported: Landlock is Linux only.
func Exec(r Ruleset, argv0 string, argv, envv []string) error { return ErrUnsupported }
