// The agentbox API from TypeScript. The types are generated from api/openapi.yaml
// (src/schema.d.ts, by openapi-typescript); every call goes through openapi-fetch,
// typed by them; the one thing a generated client cannot do, a command's
// server-sent events, is the small reader below. It deliberately adds no retries
// and no state of its own beyond a stream's last sequence number.

import createClient, { type Client as FetchClient } from "openapi-fetch";
import { Agent, fetch as undiciFetch } from "undici";
import type { components, paths } from "./schema.js";

export type { components, paths };
type Schemas = components["schemas"];
export type Environment = Schemas["Environment"];
export type CreateRequest = Schemas["CreateRequest"];
export type ExecRequest = Schemas["ExecRequest"];
export type RunRequest = Schemas["RunRequest"];
export type Result = Schemas["Result"];
export type FileEntry = Schemas["FileEntry"];
export type ErrorBody = Schemas["Error"];

/** A command's event with its output decoded: stdout or stderr bytes, or its end. */
export interface Event {
  seq: number;
  kind: "stdout" | "stderr" | "exit";
  data: Uint8Array;
  result?: Result;
}

export interface Options {
  /** The daemon's Unix socket (agentbox serve's default); or give baseUrl. */
  socket?: string;
  /** http://host:port of a daemon started with --listen. */
  baseUrl?: string;
  /** The bearer token. */
  token: string;
}

/** An error the API answered with: its envelope's code, message and HTTP status. */
export class AgentboxError extends Error {
  readonly status: number;
  readonly code: ErrorBody["code"];
  readonly retryable: boolean;
  readonly suggestedAction?: string;

  constructor(status: number, body: ErrorBody) {
    super(`agentbox: ${body.code}: ${body.message}`);
    this.name = "AgentboxError";
    this.status = status;
    this.code = body.code;
    this.retryable = body.retryable;
    this.suggestedAction = body.suggested_action;
  }
}

/** The outcome openapi-fetch returns for every call. */
interface Outcome<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** unwrap returns a call's data or throws its error envelope as an AgentboxError. */
export async function unwrap<T>(call: Promise<Outcome<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    throw toError(response.status, error);
  }
  return data as T;
}

function toError(status: number, body: unknown): AgentboxError {
  const e = (body as { error?: ErrorBody } | undefined)?.error;
  if (e && typeof e.code === "string") {
    return new AgentboxError(status, e);
  }
  return new AgentboxError(status, { code: "EINTERNAL", message: `HTTP ${status} without an error envelope`, retryable: false });
}

/** Agentbox is a connection to one daemon. */
export class Agentbox {
  /** The typed openapi-fetch client: every operation of api/openapi.yaml. */
  readonly api: FetchClient<paths>;
  private readonly fetch: typeof globalThis.fetch;
  private readonly baseUrl: string;
  private readonly token: string;

  constructor(opts: Options) {
    if (!opts.token) {
      throw new TypeError("agentbox: a token is needed (the daemon's tokens are in its config)");
    }
    if ((opts.socket === undefined) === (opts.baseUrl === undefined)) {
      throw new TypeError("agentbox: give exactly one of socket and baseUrl");
    }
    this.token = opts.token;
    if (opts.socket !== undefined) {
      // Any host name: the socket is the address.
      this.baseUrl = "http://agentbox";
      this.fetch = socketFetch(opts.socket);
    } else {
      this.baseUrl = opts.baseUrl!.replace(/\/+$/, "");
      this.fetch = globalThis.fetch;
    }
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      headers: { Authorization: `Bearer ${this.token}` },
      fetch: (req: Request) => this.fetch(req),
    });
  }

  createEnvironment(req: CreateRequest): Promise<Environment> {
    return unwrap(this.api.POST("/v1/environments", { body: req }));
  }

  getEnvironment(id: string): Promise<Environment> {
    return unwrap(this.api.GET("/v1/environments/{id}", { params: { path: { id } } }));
  }

  async destroyEnvironment(id: string): Promise<void> {
    await unwrap(this.api.DELETE("/v1/environments/{id}", { params: { path: { id } } }));
  }

  /** exec runs a command to its end; a failing command is a Result, not an error. */
  exec(id: string, req: ExecRequest): Promise<Result> {
    return unwrap(this.api.POST("/v1/environments/{id}/exec", { params: { path: { id } }, body: req }));
  }

  /** run runs a command in a fresh environment, destroyed after, in one round trip (POST /v1/run). */
  run(req: RunRequest): Promise<Result> {
    return unwrap(this.api.POST("/v1/run", { body: req }));
  }

  /** start runs a command in the background and returns its process id. */
  async start(id: string, req: ExecRequest): Promise<string> {
    const p = await unwrap(this.api.POST("/v1/environments/{id}/processes", { params: { path: { id } }, body: req }));
    return p.id;
  }

  wait(id: string, proc: string): Promise<Result> {
    return unwrap(this.api.GET("/v1/environments/{id}/processes/{proc}/wait", { params: { path: { id, proc } } }));
  }

  /** writeStdin feeds a background command (or types into its terminal); eof closes its stdin after. */
  async writeStdin(id: string, proc: string, data: string | Uint8Array, eof = false): Promise<void> {
    await unwrap(
      this.api.POST("/v1/environments/{id}/processes/{proc}/stdin", {
        params: { path: { id, proc }, query: eof ? { eof: true } : {} },
        body: data as never,
        bodySerializer: (b: unknown) => b as BodyInit,
        headers: { "Content-Type": "application/octet-stream" },
      }),
    );
  }

  async signal(id: string, proc: string, signal: string): Promise<void> {
    await unwrap(
      this.api.POST("/v1/environments/{id}/processes/{proc}/signal", { params: { path: { id, proc } }, body: { signal } }),
    );
  }

  /** resize changes the size of the terminal of a command started with tty. */
  async resize(id: string, proc: string, rows: number, cols: number): Promise<void> {
    await unwrap(
      this.api.POST("/v1/environments/{id}/processes/{proc}/resize", { params: { path: { id, proc } }, body: { rows, cols } }),
    );
  }

  async readFile(id: string, path: string): Promise<Uint8Array> {
    const buf = await unwrap(
      this.api.GET("/v1/environments/{id}/files", { params: { path: { id }, query: { path } }, parseAs: "arrayBuffer" }),
    );
    return new Uint8Array(buf as ArrayBuffer);
  }

  async writeFile(id: string, path: string, data: string | Uint8Array): Promise<void> {
    await unwrap(
      this.api.PUT("/v1/environments/{id}/files", {
        params: { path: { id }, query: { path } },
        body: data as never,
        bodySerializer: (b: unknown) => b as BodyInit,
        headers: { "Content-Type": "application/octet-stream" },
      }),
    );
  }

  /** diff is the workspace's changes since creation, as a unified diff. */
  async diff(id: string): Promise<string> {
    const text = await unwrap(this.api.GET("/v1/environments/{id}/diff", { params: { path: { id } }, parseAs: "text" }));
    return text as string;
  }

  /**
   * events follows a background command's events after the sequence number
   * `after`, ending with its exit event. A dropped connection is resumed from the
   * last event seen (Last-Event-ID), so nothing is lost or repeated; an error
   * event or answer is thrown as an AgentboxError.
   */
  async *events(id: string, proc: string, opts: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<Event> {
    let last = opts.after ?? 0;
    const url = `${this.baseUrl}/v1/environments/${encodeURIComponent(id)}/processes/${encodeURIComponent(proc)}/events`;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetch(url, {
          headers: { Authorization: `Bearer ${this.token}`, Accept: "text/event-stream", "Last-Event-ID": String(last) },
          signal: opts.signal,
        });
      } catch (err) {
        if (opts.signal?.aborted || attempt >= 5) throw err;
        await sleep(100 * 2 ** attempt);
        continue;
      }
      if (!res.ok) {
        throw toError(res.status, await res.json().catch(() => undefined));
      }
      try {
        for await (const frame of sseFrames(res.body!)) {
          if (frame.event === "error") {
            throw toError(500, JSON.parse(frame.data));
          }
          const raw = JSON.parse(frame.data) as Schemas["Event"];
          const ev: Event = { seq: raw.seq, kind: raw.kind, data: decodeBase64(raw.data), result: raw.result };
          last = ev.seq;
          attempt = 0;
          yield ev;
          if (ev.kind === "exit") return;
        }
      } catch (err) {
        if (err instanceof AgentboxError || opts.signal?.aborted || attempt >= 5) throw err;
      }
      // The stream ended before the exit event: reconnect after the last seen.
      await sleep(100 * 2 ** attempt);
    }
  }
}

/**
 * socketFetch is fetch over a Unix socket, through the undici package (Node's
 * global fetch cannot dial one). A Request made by the global fetch's classes
 * is taken apart first: the two undici copies do not share them.
 */
function socketFetch(socket: string): typeof globalThis.fetch {
  const dispatcher = new Agent({ connect: { socketPath: socket } });
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    let url: string;
    let opts: Record<string, unknown> = { ...(init ?? {}) };
    if (input instanceof Request) {
      url = input.url;
      const body = input.method === "GET" || input.method === "HEAD" ? undefined : await input.arrayBuffer();
      opts = { method: input.method, headers: [...input.headers], body, signal: input.signal, ...opts };
    } else {
      url = String(input);
      if (opts.headers instanceof Headers) opts.headers = [...opts.headers];
    }
    const res = await undiciFetch(url, { ...opts, dispatcher } as never);
    return res as unknown as Response;
  }) as typeof globalThis.fetch;
}

/** An SSE frame's event name and data (comments and ids dropped: the data has seq). */
interface Frame {
  event: string;
  data: string;
}

/** sseFrames splits a text/event-stream body into frames. */
export async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
  const decoder = new TextDecoder();
  let buf = "";
  let event = "message";
  let data: string[] = [];
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (data.length > 0) {
          yield { event, data: data.join("\n") };
        }
        event = "message";
        data = [];
      } else if (line.startsWith("event:")) {
        event = line.slice(6).trim();
      } else if (line.startsWith("data:")) {
        data.push(line.slice(5).replace(/^ /, ""));
      }
    }
  }
}

function decodeBase64(s: string | undefined): Uint8Array {
  return s ? new Uint8Array(Buffer.from(s, "base64")) : new Uint8Array();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
