package model

import (
	"math"
	"testing"
)

func TestCost(t *testing.T) {
	table := PriceTable{
		"m":       {InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75},
		"nocache": {InputPerMTok: 2, OutputPerMTok: 8},
	}
	cases := []struct {
		model string
		u     Usage
		want  float64
		known bool
	}{
		{"m", Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}, 18, true},
		{"m", Usage{InputTokens: 1_000_000, CacheReadTokens: 500_000, CacheWriteTokens: 250_000}, 0.75 + 0.15 + 0.9375, true},
		// Unset cache prices charge cached tokens at the input price.
		{"nocache", Usage{InputTokens: 1_000_000, CacheReadTokens: 1_000_000}, 2, true},
		// Inconsistent counts never give a negative cost.
		{"nocache", Usage{InputTokens: 10, CacheReadTokens: 1_000_000}, 2, true},
		{"unknown", Usage{InputTokens: 1_000_000}, 0, false},
	}
	for _, tc := range cases {
		got, known := table.Cost(tc.model, tc.u)
		if known != tc.known || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Cost(%s, %+v) = %v, %v; want %v, %v", tc.model, tc.u, got, known, tc.want, tc.known)
		}
	}
	// The requested name is looked up first, then the one the provider reported.
	if p, ok := table.price("unknown", "m"); !ok || p.InputPerMTok != 3 {
		t.Errorf("fallback to the reported model failed")
	}
}
