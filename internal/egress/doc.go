// Package egress is a sandbox's only way out: an HTTP proxy on the host, one Proxy
// per sandbox, that decides every connection by the sandbox's Policy and records it.
//
// What it does:
//   - Policy as data: an allowlist of host names (exact, "*.suffix", optional
//     ":port", "preset:npm" and the other Presets), canonicalised (case, one trailing
//     dot, UTS #46 IDNA to punycode) and refusing every byte that is not a letter,
//     digit, hyphen or dot; AllowPrivate prefixes; DNSOverride pins; Secrets; Limits.
//     The zero Policy allows nothing.
//   - HTTP CONNECT and plain absolute-URI HTTP/1.1 on any net.Listener. The proxy
//     resolves names itself (DNSOverride, else the Resolver), refuses the name if any
//     answer is a special-purpose address (CheckAddr: loopback, RFC 1918, CGNAT,
//     link-local, metadata, multicast, documentation, ULA, … and the IPv4-mapped,
//     NAT64 and 6to4 forms of those), and connects to the exact address it checked,
//     so a second DNS answer never matters. A host that is an IP address, in any
//     spelling an address parser accepts (ParseIPLiteral), is refused: the policy
//     names hosts.
//   - Plain HTTP: the absolute URI decides; the Host header must agree with it;
//     hop-by-hop and Proxy-* headers are dropped; each request gets its own upstream
//     connection. CONNECT: the tunnel must begin with a TLS ClientHello whose server
//     name is the CONNECT host, on every port, or nothing is sent upstream — so a
//     tunnel carries neither plain HTTP (whose Host the proxy would not see) nor a
//     chained proxy request. Every request through an in-sandbox relay is checked like
//     any other: relaying gains nothing.
//   - Secrets: the sandbox holds a placeholder (NewPlaceholder); the proxy intercepts
//     TLS to the secret's hosts only, with a CA made in memory for this sandbox
//     (CACertPEM, for its trust store), verifies the destination against the system or
//     configured roots, and writes the value in place of the placeholder in request
//     headers. A placeholder seen toward any other host, or over plain HTTP, stops the
//     request. Every other tunnel stays end to end, where a placeholder is invisible
//     (and worthless).
//   - Scan (off by default): every tunnel is intercepted as for Secrets, and each
//     request's target, headers and body (buffered up to Scan.MaxBody; a larger one
//     is refused) are read with secret.Scan and Scan.Values before a byte of it goes
//     upstream; a match is refused (ReasonSecretInRequest, the rule named, never
//     the value). Turning it on cuts the end-to-end tunnels open. Off, tunnels are
//     end to end and nothing is read.
//   - One Event per connection (per request for plain HTTP): time, host, port, the
//     address, decision, reason, bytes each way; a bounded ring (Log) and a callback
//     (Config.OnEvent). Limits: open connections, bytes carried.
//   - SetPolicy swaps the policy atomically for new connections and requests, cuts the
//     open connections it no longer allows, and on an invalid policy refuses and cuts
//     everything until a valid one comes. Close cuts everything.
//
// What it does not do: it is not the boundary by itself. Nothing here stops a sandbox
// from ignoring the proxy; the sandbox's network namespace must have no route but to
// it (see "Network egress" in ARCHITECTURE.md for how the sandbox connects). It
// speaks no SOCKS, HTTP/2 to the client, WebSocket or other upgrade, and carries no
// UDP; without Scan it does not inspect end-to-end tunnels beyond the ClientHello (an allowed
// host's CDN may route by the encrypted Host: domain fronting is stopped only where
// the SNI is what the CDN routes by); it cannot keep an allowed host from echoing an
// injected secret back; Scan finds the values read as sent, in hex and in base64,
// but not a secret compressed, encrypted, encoded twice or split across requests;
// it does not answer DNS for the sandbox.
//
// Wiring (done in package sandbox and nsinit, not here): the sandbox's init, before
// it confines itself, opens a TCP listener on 127.0.0.1:3128 in the sandbox's
// namespace and hands the descriptor to the host with its ready message; the host
// serves it with Serve(net.FileListener(…)) under that sandbox's Proxy. The command's
// environment gets ProxyEnv("127.0.0.1:3128"); its trust store gets CACertPEM. Relay
// is the fallback where the host cannot hold a socket of the namespace (a VM).
package egress
