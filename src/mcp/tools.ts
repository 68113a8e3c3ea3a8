import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool, type ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import { z } from "zod";
import pkg from "../../package.json";
import { failureOf, type Failure } from "../api/errors";
import { idempotencyKeyHeader } from "../api/idempotency";
import type { AppRouter } from "../api/router";
import { scopeRefusal, type KeyAuth } from "../auth/policy";
import { AppError, parseInput } from "../errors";
import { ALL_SCOPES, type Scope } from "../vocabulary/scopes";
import { historyContext } from "../generator/context";
import { generateInput, generateOutput } from "../generator/schemas";
import { lineSummary } from "../lines/schemas";
import { contactRecord } from "../messages/contacts";
import { conversationsInput, conversationsOutput } from "../messages/conversations";
import {
  chatIdField,
  historyInput,
  historyOutput,
  lineField,
  mediaInput,
  messageIdInput,
  messageRecord,
  messageTextSchema,
  phoneOrChat,
  phoneSchema,
  pollInput,
  pollOutput,
  reactionSchema,
  sendAtSchema,
  sendInput,
  typeError,
  type MessageRecord,
} from "../messages/schemas";

type Inputs = inferRouterInputs<AppRouter>;
type Outputs = inferRouterOutputs<AppRouter>;

/**
 * The API procedures the tools call: in the server, the router's caller with the MCP
 * request's context (src/api/mcp.ts); in `textwire mcp`, the typed client against
 * TEXTWIRE_URL (./stdio.ts). Either way auth, limits, validation, idempotency and STOP are
 * the REST routes' own. `idempotencyKey` is the `Idempotency-Key` header's value.
 */
export interface TextwireApi {
  send(input: Inputs["messages"]["send"], idempotencyKey?: string): Promise<Outputs["messages"]["send"]>;
  message(input: Inputs["messages"]["get"]): Promise<Outputs["messages"]["get"]>;
  history(input: Inputs["messages"]["history"]): Promise<Outputs["messages"]["history"]>;
  poll(input: Inputs["messages"]["poll"]): Promise<Outputs["messages"]["poll"]>;
  conversations(input: Inputs["conversations"]["list"]): Promise<Outputs["conversations"]["list"]>;
  generate(input: Inputs["messages"]["generate"]): Promise<Outputs["messages"]["generate"]>;
  contact(input: Inputs["contacts"]["get"]): Promise<Outputs["contacts"]["get"]>;
  react(input: Inputs["messages"]["react"]): Promise<Outputs["messages"]["react"]>;
  cancel(input: Inputs["messages"]["cancel"]): Promise<Outputs["messages"]["cancel"]>;
  lines(): Promise<Outputs["lines"]["list"]>;
}

/** How much of the conversation generate_reply gives the generator when no `context` is passed. */
export const HISTORY_CONTEXT_MESSAGES = 20;

interface ToolSpec<I extends z.ZodObject, O extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /** The key needs one of these to call it (src/auth/policy.ts); tools/list shows only the tools the key may call. */
  scopes: readonly Scope[];
  /** The arguments as given (checked against `input`: the API parses them itself) → the result, through the API. */
  run(api: TextwireApi, args: z.input<I>): Promise<z.output<O>>;
}

const tool = <I extends z.ZodObject, O extends z.ZodObject>(spec: ToolSpec<I, O>) => spec;

/** A record as a tool's whole result: its fields in an object without its OpenAPI id, so the schema's root is an object, not a $ref. */
const asResult = <S extends z.ZodObject>(record: S, description: string) => z.object(record.shape).meta({ description }) as unknown as S;
const recordOutput = asResult(messageRecord, "The message record, as GET /api/messages/{phone} shows it.");

/** The nine tools (docs/mcp.md); `maxMessageLength` is MAX_MESSAGE_LENGTH, as the send schema takes it. */
function mcpTools(maxMessageLength: number) {
  const idField = messageIdInput.shape.id;
  const list = [
    tool({
      name: "send_message",
      title: "Send a text message",
      description:
        "Sends a text message to a phone number, or into a chat by chat_id (a group's too: exactly one of the two), and returns its stored record (status queued, sent, delivered or failed; scheduled with send_at). " +
        "Your send is automated: in a chat a person supervises (and always, for a key that may only draft) it is held as a draft for a person to approve, and the record's status is draft: nothing was sent yet. " +
        "Refused when the contact opted out by replying STOP, in a group muted by a STOP, in a chat a person took over (mode human), and on the API's rate limit. Pass an idempotency_key (any unique string, e.g. a UUID) " +
        "so that a retry after a timeout or an error never texts the person twice: the same key with the same arguments returns the first message.",
      input: z.object({
        phone: phoneSchema.optional().meta({ description: "The recipient, E.164: + and country code, no spaces (or chat_id: exactly one of the two).", example: "+14155550123" }),
        chat_id: chatIdField.optional(),
        message: messageTextSchema(maxMessageLength),
        media_urls: z
          .array(z.string(typeError("a string")), typeError("an array of URLs"))
          .transform((urls) => urls.map((url) => ({ url })))
          .pipe(mediaInput)
          .optional()
          .meta({ description: "Up to 10 https URLs of files (images, video, audio, PDF) sent with the text; Textwire fetches and keeps each one (at most 25 MiB)." }),
        reply_to: sendInput(maxMessageLength).shape.reply_to,
        line: lineField("The line to send through (its id or name, as list_lines shows them); left out, Textwire picks one: a reply's line, the contact's last line, iMessage when the phone has it, else the default.").optional(),
        send_at: sendAtSchema.optional().meta({
          description: "Send later: an ISO 8601 date-time after now and at most 1 year ahead (without a zone it is UTC). The message is stored scheduled; cancel_scheduled takes it back until then.",
          example: "2026-11-21T09:30:00Z",
        }),
        idempotency_key: idempotencyKeyHeader.shape["Idempotency-Key"].meta({
          description: "1 to 255 printable ASCII characters you choose (a UUID is fine). The same key with the same arguments within 24 hours sends nothing new and returns the first message; with other arguments it is refused.",
          example: "order-1234-confirmation",
        }),
      })
        .refine(...phoneOrChat[0]!)
        .refine(...phoneOrChat[1]!),
      output: recordOutput,
      scopes: ["messages:send", "drafts:write"],
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      async run(api, { idempotency_key, media_urls, ...send }) {
        const media = media_urls?.map((url) => ({ url }));
        // An agent's send: the chat's mode decides whether it goes or waits as a draft (docs/supervision.md).
        const sent = await api.send({ ...send, ...(media ? { media } : {}), automated: true }, idempotency_key);
        return (await api.message({ id: sent.message_id })).message;
      },
    }),
    tool({
      name: "get_history",
      title: "Read a conversation",
      description:
        "The messages exchanged with one phone number, newest first, a page at a time (limit, offset), and how many there are in all (total). " +
        "Each record says its direction (inbound: from the contact; outbound: ours), status, reactions and read_at.",
      input: z.object({ phone: phoneSchema, limit: historyInput.shape.limit, offset: historyInput.shape.offset }),
      output: historyOutput.omit({ success: true }),
      scopes: ["messages:read"],
      annotations: { readOnlyHint: true, openWorldHint: false },
      async run(api, args) {
        const { success: _, ...page } = await api.history(args);
        return page;
      },
    }),
    tool({
      name: "poll_inbound",
      title: "New inbound messages",
      description:
        "Messages people sent to us, oldest first, after `since`. Pass the returned next_since as the next call's since to get each message exactly once; " +
        "has_more says another page is waiting at once. Polling consumes nothing: any number of agents may poll the same messages.",
      // Direct chats only, as GET /api/messages/poll without chats=all: a group's messages are read by chat.
      input: z.object({
        since: pollInput.shape.since,
        phone: pollInput.shape.phone.meta({ description: "Only messages from this E.164 phone number.", example: "+14155550123" }),
        limit: pollInput.shape.limit,
      }),
      output: z.object({
        messages: pollOutput.shape.messages,
        has_more: pollOutput.shape.has_more,
        next_since: z
          .string()
          .nullable()
          .meta({ description: "The since of the next call: the last message's timestamp, or the since given when none came (null when neither)." }),
      }),
      scopes: ["messages:read"],
      annotations: { readOnlyHint: true, openWorldHint: false },
      async run(api, args) {
        const page = await api.poll(args);
        return { messages: page.messages, has_more: page.has_more, next_since: page.messages.at(-1)?.timestamp ?? args.since ?? null };
      },
    }),
    tool({
      name: "list_conversations",
      title: "List conversations",
      description:
        "One entry per phone number with any message, the most recently active first: its last message, its unread count (inbound messages not marked read) and whether it opted out. " +
        "`query` keeps only phone numbers holding those digits.",
      input: z.object({ query: conversationsInput.unwrap().shape.search, limit: conversationsInput.unwrap().shape.limit }),
      output: conversationsOutput,
      scopes: ["messages:read"],
      annotations: { readOnlyHint: true, openWorldHint: false },
      run: (api, { query, limit }) => api.conversations({ search: query, limit }),
    }),
    tool({
      name: "generate_reply",
      title: "Write a reply with the AI generator",
      description:
        "Writes a reply to a contact with the server's generator (as POST /api/generate): from `context`, or without it from the contact's last " +
        `${HISTORY_CONTEXT_MESSAGES} messages. With auto_send true it is sent at once, exactly as send_message sends (refused for a contact that opted out); ` +
        "without, nothing is sent and you may send the text yourself.",
      input: generateInput.extend({
        context: generateInput.shape.context.optional().meta({
          description: `The conversation so far, oldest first: the contact's turns as user, ours as assistant. Default: the contact's last ${HISTORY_CONTEXT_MESSAGES} messages.`,
        }),
      }),
      output: generateOutput.omit({ success: true }),
      scopes: ["drafts:write", "messages:send"],
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      async run(api, { context, ...request }) {
        const turns = context ?? historyContext((await api.history({ phone: request.phone, limit: HISTORY_CONTEXT_MESSAGES })).messages);
        if (turns.length === 0) throw new AppError("BAD_REQUEST", `context: is required: ${request.phone} has no text messages to answer yet`);
        const { success: _, ...answer } = await api.generate({ ...request, context: turns });
        return answer;
      },
    }),
    tool({
      name: "get_contact",
      title: "A contact's state",
      description:
        "Whether the contact opted out (replied STOP; sends to it are refused until it replies START), how many of its messages are unread, and whether it is typing now.",
      input: z.object({ phone: phoneSchema }),
      output: asResult(contactRecord, "The contact."),
      scopes: ["messages:read"],
      annotations: { readOnlyHint: true, openWorldHint: false },
      run: async (api, args) => (await api.contact(args)).contact,
    }),
    tool({
      name: "react",
      title: "React to a message",
      description:
        "Puts our tapback (love, like, dislike, laugh, emphasize, question) on a message of a conversation, ours or the contact's, and sends it to the network; " +
        "it replaces our previous reaction on that message. Returns the message record with its reactions.",
      input: z.object({ message_id: idField.meta({ description: "The message's id (a record's id)." }), reaction: reactionSchema }),
      output: recordOutput,
      scopes: ["messages:send"],
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
      run: async (api, { message_id, reaction }) => (await api.react({ id: message_id, reaction })).message,
    }),
    tool({
      name: "list_lines",
      title: "List the lines",
      description:
        "The numbers and accounts Textwire sends through (its lines): id, name, network (twilio, bluebubbles for iMessage, android, loopback), our address on it, " +
        "whether it is the default and enabled, and what it can do. send_message takes a line's id or name as `line`.",
      input: z.object({}),
      output: z.object({ lines: z.array(lineSummary) }),
      scopes: ["messages:read", "lines:manage"],
      annotations: { readOnlyHint: true, openWorldHint: false },
      async run(api) {
        const { lines } = await api.lines();
        return { lines: lines.map(({ settings: _, webhook_url: __, ...line }) => line) };
      },
    }),
    tool({
      name: "cancel_scheduled",
      title: "Cancel a scheduled message",
      description: "Cancels a message sent with send_at that is still scheduled: it becomes canceled and is never sent. Refused once it has left scheduled.",
      input: z.object({ message_id: idField.meta({ description: "The scheduled message's id (send_message's result id)." }) }),
      output: recordOutput,
      scopes: ["messages:send"],
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      run: async (api, { message_id }) => (await api.cancel({ id: message_id })).message,
    }),
  ];
  // Each spec's own input and output types stay inside it; the server handles them alike.
  return list as unknown as ToolSpec<z.ZodObject, z.ZodObject>[];
}

/** A zod-openapi `override` in a schema's meta (src/messages/schemas.ts wholeNumber) applies here too: limits are integers. */
const metaOverride = (ctx: { zodSchema: unknown; jsonSchema: Record<string, unknown> }) => {
  const override = (z.globalRegistry.get(ctx.zodSchema as z.ZodType) as { override?: unknown } | undefined)?.override;
  if (typeof override === "function") override(ctx);
};

/** JSON Schema draft 7, as the SDK writes its own (and clients validate with). */
const jsonSchema = (schema: z.ZodType, io: "input" | "output") =>
  z.toJSONSchema(schema, { io, target: "draft-7", override: metaOverride }) as Tool["inputSchema"];

/** The tools, and what tools/list answers with, built once. */
export interface ToolSet {
  byName: Map<string, ToolSpec<z.ZodObject, z.ZodObject>>;
  listed: (Tool & { scopes: readonly Scope[] })[];
}

export function createToolSet(maxMessageLength: number): ToolSet {
  const tools = mcpTools(maxMessageLength);
  return {
    byName: new Map(tools.map((t) => [t.name, t])),
    listed: tools.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: jsonSchema(t.input, "input"),
      outputSchema: jsonSchema(t.output, "output"),
      annotations: { title: t.title, ...t.annotations },
      scopes: t.scopes,
    })),
  };
}

const INSTRUCTIONS =
  "Textwire texts people (SMS or iMessage) and keeps every conversation. Read with poll_inbound (pass next_since back as since), get_history and list_conversations; " +
  "write with send_message (always with an idempotency_key) or generate_reply. A contact that replied STOP cannot be texted until it replies START (get_contact says). " +
  "In a supervised chat your sends are drafts (status draft) that a person approves; in a chat a person took over, they are refused. " +
  "A refused call is a result with isError whose text says which argument or rule refused it.";

/**
 * Why a tools/call request's params are not `{ name, arguments? }`, in one sentence, or
 * undefined when they are. The SDK would parse them first and answer -32603 with zod's
 * issue list (protocol.js setRequestHandler); JSON-RPC 2.0 says invalid params are -32602.
 */
export function toolCallParamsProblem(params: unknown): string | undefined {
  if (typeof params !== "object" || params === null || Array.isArray(params)) return "Invalid params: tools/call takes params { name, arguments }, an object";
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== "string") return "Invalid params: params.name must be the name of a tool, a string (tools/list names them)";
  if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) return "Invalid params: params.arguments must be an object of the tool's arguments";
  return undefined;
}

/** The SDK's server, answering a tools/call with malformed params -32602 before the SDK parses it. */
class ToolServer extends Server {
  override async connect(transport: Transport): Promise<void> {
    await super.connect(transport);
    const deliver = transport.onmessage!;
    transport.onmessage = (message, extra) => {
      const request = message as { method?: unknown; id?: unknown; params?: unknown };
      const problem = request.method === "tools/call" && (typeof request.id === "string" || typeof request.id === "number") ? toolCallParamsProblem(request.params) : undefined;
      if (problem === undefined) return deliver(message, extra);
      void transport.send({ jsonrpc: "2.0", id: request.id as string | number, error: { code: ErrorCode.InvalidParams, message: problem } });
    };
  }
}

/** One validator for every server: the SDK would build one per server otherwise. */
const validator = new AjvJsonSchemaValidator();

/**
 * An MCP server with the tools over `api`. The SDK's low-level server: the tools' arguments
 * are checked here with the API's schemas and messages (McpServer would answer its own),
 * and every refusal is a result with isError whose text is the API's message (failureOf),
 * never a protocol error. `onFailure` logs what failureOf says to log.
 */
export function createToolServer(
  api: TextwireApi,
  { byName, listed }: ToolSet,
  onFailure: (failure: Failure) => void,
  key: Pick<KeyAuth, "scopes"> = { scopes: [ALL_SCOPES] },
): Server {
  const server = new ToolServer({ name: "textwire", version: pkg.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: validator });
  const mayCall = (scopes: readonly Scope[]) => scopeRefusal(key, scopes[0]!, ...scopes.slice(1));
  const tools = listed.filter((t) => mayCall(t.scopes) === null).map(({ scopes: _, ...t }) => t);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const spec = byName.get(request.params.name);
    if (!spec) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    try {
      // Not listed for this key: refused as the API would, naming the scope.
      const refusal = mayCall(spec.scopes);
      if (refusal) throw refusal;
      const args = request.params.arguments ?? {};
      parseInput(spec.input, args);
      const result = await spec.run(api, args);
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
    } catch (err) {
      const failure = failureOf(err);
      onFailure(failure);
      return { content: [{ type: "text", text: failure.body.message }], isError: true };
    }
  });
  return server;
}
