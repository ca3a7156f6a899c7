// Package egress decides where a sandbox may connect. This part is its policy as
// data: an allowlist of host names (exact, "*.suffix", optional ":port",
// "preset:npm" and the other Presets), canonicalised (case, one trailing dot, UTS
// #46 IDNA to punycode) and refusing every byte that is not a letter, digit, hyphen
// or dot; IP literals recognised in every spelling an address parser accepts
// (ParseIPLiteral) and refused as names; the address checks (CheckAddr: the IANA
// special-purpose ranges, cloud metadata, and the IPv4-mapped, NAT64 and 6to4 forms
// of those); AllowPrivate prefixes; DNSOverride pins; secrets' placeholders; limits.
// The zero Policy allows nothing.
//
// It does not connect anywhere.
package egress
