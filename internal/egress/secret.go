package egress

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
)

// placeholderPrefix begins every placeholder, so a reader of a log or a request can
// tell one when they see it.
const placeholderPrefix = "agentbox-secret-"

// Secret is a credential the sandbox never holds. The sandbox's environment carries
// Placeholder instead of Value; the proxy writes Value in place of Placeholder into
// the headers of requests to the hosts in Hosts, over HTTPS only (it intercepts
// those hosts' TLS). Any request elsewhere that carries the placeholder is refused.
//
// A Secret prints, logs and marshals with its value redacted.
type Secret struct {
	Name        string   `json:"name"`
	Hosts       []string `json:"hosts"` // patterns, as in Policy.Allow
	Placeholder string   `json:"placeholder"`
	Value       string   `json:"-"`
}

// NewPlaceholder returns a fresh placeholder for the secret called name:
// agentbox-secret-NAME- and 128 random bits in hex.
func NewPlaceholder(name string) (string, error) {
	if err := checkSecretName(name); err != nil {
		return "", err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return placeholderPrefix + name + "-" + hex.EncodeToString(b[:]), nil
}

func checkSecretName(name string) error {
	if name == "" || len(name) > 64 || strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return fmt.Errorf("secret name %q: want 1 to 64 letters, digits or '_'", name)
	}
	return nil
}

// checkPlaceholder requires the form NewPlaceholder makes, so a placeholder is long
// and random enough never to occur in a request by chance.
func checkPlaceholder(name, ph string) error {
	rest, ok := strings.CutPrefix(ph, placeholderPrefix+name+"-")
	if _, err := hex.DecodeString(rest); !ok || err != nil || len(rest) < 32 || strings.ToLower(rest) != rest {
		return fmt.Errorf("placeholder of secret %s: want %s%s- and at least 32 lowercase hex digits (NewPlaceholder)", name, placeholderPrefix, name)
	}
	return nil
}

const maxSecretValue = 8 << 10

func checkSecretValue(s Secret) error {
	switch {
	case s.Value == "":
		return fmt.Errorf("secret %s has no value", s.Name)
	case len(s.Value) > maxSecretValue:
		return fmt.Errorf("secret %s: value of %d bytes (at most %d)", s.Name, len(s.Value), maxSecretValue)
	case strings.ContainsAny(s.Value, "\x00\r\n"):
		// It goes into a header: CR or LF would split it.
		return fmt.Errorf("secret %s: value contains NUL, CR or LF", s.Name)
	case strings.Contains(s.Value, placeholderPrefix):
		return fmt.Errorf("secret %s: value contains %q", s.Name, placeholderPrefix)
	}
	return nil
}

const redacted = "[redacted]"

// Format prints the secret without its value, whatever the verb.
func (s Secret) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "{Name:%s Hosts:%v Placeholder:%s Value:%s}", s.Name, s.Hosts, s.Placeholder, redacted)
}

// LogValue logs the secret without its value.
func (s Secret) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", s.Name), slog.Any("hosts", s.Hosts), slog.String("value", redacted))
}

var _ fmt.Formatter = Secret{}

// NewSecret returns the secret called name with its value and a fresh placeholder,
// injected into requests to hosts (patterns, as in Policy.Allow).
func NewSecret(name, value string, hosts ...string) (Secret, error) {
	ph, err := NewPlaceholder(name)
	if err != nil {
		return Secret{}, err
	}
	s := Secret{Name: name, Hosts: hosts, Placeholder: ph, Value: value}
	if _, err := compileSecret(s); err != nil {
		return Secret{}, err
	}
	return s, nil
}
