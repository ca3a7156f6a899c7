// Package model talks to language models for the agent loop.
//
// It defines a provider-neutral conversation (Message, ToolCall, ToolResult, ToolDef,
// Request, Response) and adapters that speak two wire protocols, each with and
// without streaming: OpenAI Chat Completions against any compatible base URL
// (OpenAI, OpenRouter, vLLM, llama.cpp server, Ollama) and the Anthropic Messages
// API. Around an adapter a caller composes wrappers that implement the same Client
// interface: Retry (exponential backoff with full jitter that honours Retry-After,
// capped per wait, in total and in attempts), Breaker (one circuit per provider) and
// TrimOnOverflow (when the provider says the prompt is too long, trim the oldest
// tool output and middle turns and try exactly once more).
//
// Accounting comes first: every HTTP response is reported to an Observer with its
// provider request id, token usage and cost before its body is turned into messages,
// so a reply that fails to parse still leaves a record of what it cost. Tool-call
// arguments that are not a JSON object come back as a per-call ArgsError, never as a
// failed request, so the loop can hand the mistake back to the model.
//
// Tool results reach the model as data, not instructions: RenderToolResult wraps each
// one in a <tool_result untrusted="true"> block whose content cannot close it. API
// keys are Secret values that print, log and marshal as [redacted]; provider error
// messages are scrubbed of the key, and authentication errors carry no provider text.
//
// It deliberately does not run tools, keep the history, decide what a reply means,
// validate arguments against tool schemas, count tokens exactly (EstimateTokens is a
// byte heuristic), manage prompt caching, or read keys or prices from files or the
// environment: the agent loop, the tool registry and cmd/ do those.
package model
