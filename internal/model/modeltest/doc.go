// Package modeltest provides fakes for testing code that talks to models through
// package model: a fake Clock and a fixed jitter source, and scripted servers that
// speak the OpenAI Chat Completions and Anthropic Messages wire protocols, streamed
// or not, so a whole agent session can be driven through a real adapter.
//
// A scripted server answers each request with the next Turn of its script (tool
// calls to make, a final text, or an HTTP error), in the format the request asked
// for, and records what it received. Like the real services it checks each request
// against the protocol's rules (every tool call answered by the next message,
// results only for calls just made, strict role alternation and a required
// max_tokens for Anthropic, valid tool names, an API key for Anthropic) and answers
// a violation with a 400 in the provider's error format, without consuming a turn.
//
// It does not imitate a model: it never reads the prompt to decide what to say,
// and its token counts are byte counts divided by four.
package modeltest
