package api

import "github.com/agentbox/agentbox/internal/env"

// NewMemService exposes the in-memory test double to this directory's external
// tests (MCP over HTTP).
func NewMemService() env.Service { return newMem() }

// Test tokens and configuration, for the external tests.
const (
	TokA = tokA
	TokB = tokB
	// TestConfig takes tenant a's workspace root.
	TestConfig = testConfig
	TokARead   = tokARead
	TokOp      = tokOp
)
