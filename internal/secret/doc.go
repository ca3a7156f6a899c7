// Package secret recognises secrets: the paths that hold credentials (.env files,
// .ssh/, cloud credential directories, key files) and content shaped like a key, a
// token or a password (AWS keys, GitHub, Slack, Stripe, OpenAI and Anthropic key
// shapes, private key blocks, JWTs, URLs with a password, egress placeholders, and
// KEY=/TOKEN=/SECRET= assignments of a high-entropy value). It is the one list of
// them: the permission policy classifies a call's targets with Path, the taint of a
// session is fed by Scan over tool results, and the egress proxy scans outgoing
// payloads with the same Scan.
//
// Data is classed public < project < secret < credential (Class). A path or content
// this package recognises is secret or credential; everything else in a workspace is
// project, and only the caller can say that something is public.
//
// It deliberately does not prove anything is not a secret: a value that has no known
// shape and lower entropy than the threshold passes, as does a secret split across
// two reads or encoded (base64 of a key is not a key shape). It is a tripwire with
// few false alarms, not a data-loss-prevention system; the policy around it (a
// separate capability for sensitive paths, no network for a tainted session) is the
// defence. It does not read files or resolve links: Path judges a name as given.
package secret
