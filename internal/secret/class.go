package secret

import (
	"encoding/json"
	"fmt"
)

// Class is how sensitive data is. Classes are ordered: Public < Project < Secret <
// Credential; the zero Class is invalid, not public.
type Class string

const (
	// Public data may go anywhere: what the caller knows is published.
	Public Class = "public"
	// Project data is the workspace's ordinary content: code, docs, test output.
	Project Class = "project"
	// Secret data must not leave: .env files, tokens of unknown kind, JWTs.
	Secret Class = "secret"
	// Credential data grants access somewhere: private keys, cloud and registry
	// credentials, known API key shapes.
	Credential Class = "credential"
)

// Classes lists the classes from the least to the most sensitive.
var Classes = []Class{Public, Project, Secret, Credential}

// Rank orders the classes: 0 for Public up to 3 for Credential, -1 for an invalid
// class.
func (c Class) Rank() int {
	switch c {
	case Public:
		return 0
	case Project:
		return 1
	case Secret:
		return 2
	case Credential:
		return 3
	}
	return -1
}

// Sensitive reports whether c is Secret or Credential.
func (c Class) Sensitive() bool { return c.Rank() >= Secret.Rank() }

// Max returns the more sensitive of two classes (a valid one over an invalid one).
func Max(a, b Class) Class {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}

// ParseClass parses a class name.
func ParseClass(s string) (Class, error) {
	c := Class(s)
	if c.Rank() < 0 {
		return "", fmt.Errorf("unknown data class %q (want public, project, secret or credential)", s)
	}
	return c, nil
}

// UnmarshalText refuses an unknown class, so a policy file cannot misspell one.
func (c *Class) UnmarshalText(b []byte) error {
	v, err := ParseClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

var _ json.Unmarshaler = (*Class)(nil)

// UnmarshalJSON is UnmarshalText for a JSON string.
func (c *Class) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("data class: want a string")
	}
	return c.UnmarshalText([]byte(s))
}
