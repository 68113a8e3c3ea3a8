import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createClient, type TextwireClient } from "../client";
import type { Logger } from "../log";
import { remoteCall } from "../remote-call";
import { ALL_SCOPES } from "../vocabulary/scopes";
import { createToolServer, createToolSet, type TextwireApi } from "./tools";

/** The API of the server at TEXTWIRE_URL, through the typed client: each call one HTTP request with the key. */
export function remoteApi(client: TextwireClient, url: string): TextwireApi {
  const remote = <T>(call: () => Promise<T>): Promise<T> => remoteCall(call, url);
  return {
    send: (input, key) => remote(() => client.messages.send.mutate(input, { context: { idempotencyKey: key } })),
    message: (input) => remote(() => client.messages.get.query(input)),
    history: (input) => remote(() => client.messages.history.query(input)),
    poll: (input) => remote(() => client.messages.poll.query(input)),
    conversations: (input) => remote(() => client.conversations.list.query(input)),
    generate: (input) => remote(() => client.messages.generate.mutate(input)),
    contact: (input) => remote(() => client.contacts.get.query(input)),
    react: (input) => remote(() => client.messages.react.mutate(input)),
    cancel: (input) => remote(() => client.messages.cancel.mutate(input)),
    lines: () => remote(() => client.lines.list.query()),
  };
}

/**
 * `textwire mcp`: the tools over stdio for a local agent host, against the server at `url`.
 * Standard output carries only the protocol; the log goes to `log` (standard error). Ends
 * the process when the host closes standard input.
 */
export async function serveStdio(opts: { url: string; apiKey: string; maxMessageLength: number; log: Logger }): Promise<void> {
  const client = createClient({ url: opts.url, apiKey: opts.apiKey });
  const api = remoteApi(client, opts.url);
  // The key's scopes, so tools/list shows only what it may call; a server that does not say lists every tool (each call is still checked there).
  const scopes = await client.system.info.query().then((info) => info.scopes, () => [ALL_SCOPES] as const);
  const server = createToolServer(api, createToolSet(opts.maxMessageLength), (failure) => {
    if (failure.log) opts.log.error("tool call failed", { error: String(failure.log.cause) });
  }, { scopes });
  process.stdin.once("end", () => {
    void server.close().finally(() => process.exit(0));
  });
  await server.connect(new StdioServerTransport());
  opts.log.info("serving MCP over stdio", { server: opts.url });
}
