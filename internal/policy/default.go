package policy

import (
	_ "embed"
	"sync"
)

//go:embed default.yaml
var defaultText []byte

// DefaultText is the built-in policy file, for printing.
func DefaultText() []byte { return append([]byte(nil), defaultText...) }

var defaultPolicy = sync.OnceValue(func() *Policy {
	p, err := Parse(defaultText)
	if err != nil {
		panic("the built-in policy is invalid: " + err.Error())
	}
	return p
})

// Default returns the built-in policy: seed 004's defaults.
func Default() *Policy { return defaultPolicy() }
