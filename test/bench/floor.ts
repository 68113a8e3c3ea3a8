/**
 * The floor: the smallest honest implementation of Textwire's four hot routes, written
 * only to be measured against (`bun run bench`). Raw Bun.serve, no framework, and per
 * request the same database work as Textwire (src/messages/service.ts on the repositories
 * src/db/messages.ts, src/db/sqlite/repositories.ts, src/db/postgres/messages.ts) and no more:
 *
 *   POST /api/send            refused when the contact opted out (a read of `contacts`), insert
 *                             `queued` (timestamp by the clock rule), the loopback network
 *                             "delivers" it (a status update; the row read back only when the
 *                             update did not move it, as sendMessage does)
 *   POST /webhooks/loopback   insert `received`, deduplicated by the network's `id`; a STOP or
 *                             START keyword (Textwire's rule, src/messages/opt-out.ts) also sets
 *                             the contact's opt-out
 *   GET  /api/messages/:phone one page, newest first, and the total from `contacts`
 *   GET  /api/messages/poll   inbound after `since` (exclusive), oldest first, limit + 1 rows
 *
 * The store (the SQL) is chosen by DATABASE_URL:
 *
 * - a file or `:memory:`: test/bench/floor-sqlite.ts, bun:sqlite prepared statements read
 *   with `.values()`, the same pragmas (WAL, synchronous=NORMAL, busy_timeout) and SQL as
 *   src/db/sqlite/repositories.ts: an insert under BEGIN IMMEDIATE with max(timestamp) + 1 vs
 *   the wall clock, the history page and total in one read transaction.
 * - postgres:// or postgresql://: test/bench/floor-postgres.ts, raw `pg` (a Pool of
 *   DATABASE_POOL_SIZE, default 10, named prepared statements read as arrays) with the SQL
 *   of src/db/postgres/messages.ts: inserts batched while one is being written, each batch
 *   one statement that moves `message_clock`; the history page and total in one statement.
 *
 * Each store opens its database as Textwire does (src/db/sqlite/open.ts openSqlite,
 * src/db/postgres/open.ts openPostgres: the same pragmas or pool, migrations applied by
 * drizzle's migrator under Textwire's lock), so either starts on a database the other
 * migrated. Start-up is not measured; per request the floor uses Textwire's plain rule
 * functions (src/messages/phone.ts, text.ts, time.ts) and nothing of its framework.
 *
 * Records carry `reply_to`, `media` and `reactions` (each read in one more query only when a
 * page has a message with some, as src/messages/records.ts toRecords), `read_at`, `edited_at`,
 * `unsent_at`, `chat_id` (the contact's direct chat: the floor serves direct messages only,
 * as the spec's routes read them), and `send_at` when set. Text only: no media, replies, scheduling, reactions,
 * read marks, edits or unsends are sent.
 *
 * The same rules as Textwire (src/messages/schemas.ts, phone.ts, text.ts, time.ts,
 * src/api/http.ts, auth.ts): auth by SHA-256 of the bearer key (timingSafeEqual against
 * API_KEYS, else a lookup by hash in api_keys), failed attempts limited to 20 a minute per
 * address (a valid key is never refused by it), body at most 1 MiB of strict UTF-8,
 * `application/json` only, E.164 phones (shape, then libphonenumber's possible-number check
 * behind a bounded cache, as phone.ts), message text rules, limit/offset/since rules; the
 * same JSON answers and error envelope (with `issues`). Not a product: no tRPC, OpenAPI,
 * idempotency keys, rate limits per key, other networks or workflows.
 *
 *   PORT=0 DATABASE_URL=/tmp/floor.db API_KEYS=k1,k2 bun test/bench/floor.ts
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { E164_HINT, isE164, phoneFromPath, phoneFromQuery } from "../../src/messages/phone";
import { optOutAction, OPTED_OUT_MESSAGE } from "../../src/messages/opt-out";
import { messageTextProblem } from "../../src/messages/text";
import { isoTime, parseIsoInstant } from "../../src/messages/time";
import { directChatId } from "../../src/vocabulary/chats";

// ---- the store port (implemented by floor-sqlite.ts and floor-postgres.ts) --------------

/** A message as its record needs it. */
export type RecordValues = [
  id: string,
  phone: string,
  body: string,
  direction: string,
  status: string,
  timestamp: number,
  error: string | null,
  replyTo: string | null,
  mediaCount: number,
  sendAt: number | null,
  reactionCount: number,
  readAt: number | null,
  editedAt: number | null,
  unsentAt: number | null,
  lineId: string,
];

/** A message's file as its record shows it: id, content type, size. */
export type MediaValues = [id: string, contentType: string, size: number];

/** A reaction standing on a message: ours with phone '', its time in ms. */
export type ReactionValues = [reaction: string, direction: string, phone: string, createdAt: number];

/** What a store answers: at once (bun:sqlite) or later (pg). */
export type Maybe<T> = T | Promise<T>;

export interface FloorStore {
  /** Whether an active (not revoked) key with this SHA-256 hash (hex) is stored. */
  keyExists(hash: string): Maybe<boolean>;
  /** Stores a message with the next timestamp; a network id already stored returns that message's id and timestamp. */
  insert(id: string, phone: string, body: string, direction: "outbound" | "inbound", status: string, networkId: string | null): Maybe<{ id: string; timestamp: number }>;
  /** queued or sent → delivered, with the network's id (Textwire's setStatus); whether it moved. */
  markDelivered(id: string, networkId: string): Maybe<boolean>;
  /** The message by id (read back after a send whose status did not move, as sendMessage does). */
  get(id: string): Maybe<RecordValues | undefined>;
  /** A page, newest first, and the contact's total. */
  history(phone: string, limit: number, offset: number): Maybe<{ rows: RecordValues[]; total: number }>;
  /** Inbound after `since` (µs, exclusive), oldest first, at most `limit` rows. */
  inboundAfter(since: number, limit: number, phone: string | null): Maybe<RecordValues[]>;
  /** The files of these messages, each message's in order. */
  mediaOf(ids: string[]): Maybe<Map<string, MediaValues[]>>;
  /** The reactions standing on these messages, each message's oldest first. */
  reactionsOf(ids: string[]): Maybe<Map<string, ReactionValues[]>>;
  /** Whether the contact opted out. */
  optedOut(phone: string): Maybe<boolean>;
  /** Sets the contact's opt-out (a keyword came in). */
  setOptedOut(phone: string, out: boolean): Maybe<void>;
  close(): Maybe<void>;
}

// ---- configuration --------------------------------------------------------------------

const PORT = Number(process.env.PORT ?? 3000);
const DATABASE_URL = process.env.DATABASE_URL ?? "./data/floor.db";
const API_KEYS = (process.env.API_KEYS ?? "").split(",").map((k) => k.trim()).filter(Boolean);
const MAX_MESSAGE_LENGTH = Number(process.env.MAX_MESSAGE_LENGTH ?? 10000);
const MAX_BODY_BYTES = 1024 * 1024;
const MAX_PAGE = 100;
const onPostgres = /^postgres(ql)?:\/\//i.test(DATABASE_URL);

const store: FloorStore = onPostgres
  ? await (await import("./floor-postgres")).openPostgresStore(DATABASE_URL, Number(process.env.DATABASE_POOL_SIZE ?? 10))
  : (await import("./floor-sqlite")).openSqliteStore(DATABASE_URL);

// ---- rules ----------------------------------------------------------------------------

interface Issue {
  path: string;
  message: string;
}

class Fail extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly issues?: Issue[],
    /** Why, for a refusal a workflow or client tells apart (src/errors.ts ErrorDetails.reason). */
    readonly reason?: string,
  ) {
    super(message);
  }
}

/** One 400 naming every invalid field, as Textwire's validation answers (src/errors.ts issuesMessage). */
function invalid(issues: Issue[]): Fail {
  return new Fail(400, "BAD_REQUEST", issues.map((i) => `${i.path}: ${i.message}`).join("; "), {}, issues);
}

/** Why `v` is not a phone, or null. */
function phoneProblem(v: unknown): string | null {
  if (v === undefined) return "is required";
  if (typeof v !== "string") return "must be a string";
  return isE164(v) ? null : E164_HINT;
}

/** Why `v` cannot be a message text, or null (Textwire's rule, src/messages/text.ts). */
function textProblem(v: unknown): string | null {
  if (v === undefined) return "is required (or media)";
  if (typeof v !== "string") return "must be a string";
  return messageTextProblem(v, MAX_MESSAGE_LENGTH);
}

const WHOLE = /^\s*-?\d+\s*$/;
/** A whole number from a query string (src/messages/schemas.ts wholeNumber): the value, or why not. */
function wholeNumber(raw: string | null, min: number, fallback: number, field: string, issues: Issue[]): number {
  if (raw === null) return fallback;
  const n = WHOLE.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n)) issues.push({ path: field, message: "must be a whole number" });
  else if (n < min) issues.push({ path: field, message: `must be at least ${min}` });
  return n;
}

// ---- auth -----------------------------------------------------------------------------

const envHashes = API_KEYS.map((k) => createHash("sha256").update(k).digest());
const BEARER = /^bearer +(\S+) *$/i;

/** Failed authentications per address: a bucket of 20, refilled at 20 a minute (src/api/rate-limit.ts). */
const failures = new Map<string, { tokens: number; at: number }>();
const FAIL_BURST = 20;
const FAIL_PER_MS = 20 / 60_000;

function failedAttempt(ip: string): number | null {
  const t = Date.now();
  let b = failures.get(ip);
  if (!b) {
    if (failures.size >= 10_000) failures.clear();
    failures.set(ip, (b = { tokens: FAIL_BURST, at: t }));
  } else {
    b.tokens = Math.min(FAIL_BURST, b.tokens + (t - b.at) * FAIL_PER_MS);
    b.at = t;
  }
  if (b.tokens < 1) return Math.max(1, Math.ceil((1 - b.tokens) / FAIL_PER_MS / 1000));
  b.tokens -= 1;
  return null;
}

/** The key first; only a failure counts against the address, and only failures are refused by that count. */
async function authenticate(req: Request, ip: string): Promise<void> {
  const key = BEARER.exec(req.headers.get("authorization") ?? "")?.[1];
  if (key) {
    const hash = createHash("sha256").update(key).digest();
    let match = false;
    for (const h of envHashes) if (timingSafeEqual(h, hash)) match = true;
    if (match || (await store.keyExists(hash.toString("hex")))) return;
  }
  const retryAfter = failedAttempt(ip);
  if (retryAfter !== null) {
    throw new Fail(429, "TOO_MANY_REQUESTS", "too many failed authentication attempts from this address; try again later", { "Retry-After": String(retryAfter) });
  }
  throw new Fail(401, "UNAUTHORIZED", key ? "authorization: invalid API key" : "authorization: missing header, expected 'Authorization: Bearer <API_KEY>'", {
    "WWW-Authenticate": "Bearer",
  });
}

// ---- bodies and answers ---------------------------------------------------------------

const JSON_MEDIA_TYPE = /^application\/json[ \t]*(?:;|$)/i;
const utf8 = new TextDecoder("utf-8", { fatal: true });

async function jsonBody(req: Request): Promise<Record<string, unknown>> {
  const type = req.headers.get("content-type") ?? "";
  if (!JSON_MEDIA_TYPE.test(type)) {
    const got = type ? ` (got ${type.split(";")[0]!.trim().slice(0, 100)})` : "";
    throw new Fail(415, "UNSUPPORTED_MEDIA_TYPE", `content-type: must be application/json${got}`);
  }
  const tooLarge = () => new Fail(413, "PAYLOAD_TOO_LARGE", `body: larger than ${MAX_BODY_BYTES} bytes`);
  if (Number(req.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) throw tooLarge();
  const bytes = await req.bytes();
  if (bytes.length > MAX_BODY_BYTES) throw tooLarge();
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalid([{ path: "body", message: "not valid UTF-8" }]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Fail(400, "BAD_REQUEST", "body: malformed JSON", {}, [{ path: "body", message: "malformed JSON" }]);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalid([{ path: "body", message: "must be a JSON object" }]);
  return value as Record<string, unknown>;
}

/** Characters JSON.stringify would escape (quote, backslash, control, surrogates): most texts have none. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
/** A string as JSON, exactly as JSON.stringify writes it, without its cost when nothing needs escaping. */
const str = (s: string) => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`);

const mediaJson = (m: MediaValues) => `{"id":${str(m[0])},"content_type":${str(m[1])},"size":${m[2]},"url":"/api/media/${m[0]}"}`;
const reactionJson = (r: ReactionValues) =>
  `{"reaction":${str(r[0])},"direction":${str(r[1])},"phone":${r[1] === "outbound" ? "null" : str(r[2])},"timestamp":"${isoTime(r[3] * 1000)}"}`;
/** A time in ms as records show it, null as null. */
const msTime = (ms: number | null) => (ms === null ? "null" : `"${isoTime(ms * 1000)}"`);

type Files = Map<string, MediaValues[]> | undefined;
type Reactions = Map<string, ReactionValues[]> | undefined;

/** A message record's JSON (src/messages/records.ts toRecord), keys in the same order. */
function recordJson(r: RecordValues, media: Files, reactions: Reactions): string {
  const error = r[6] ? `,"error":${str(r[6])}` : "";
  const sendAt = r[9] === null ? "" : `,"send_at":"${isoTime(r[9] * 1000)}"`;
  const files = r[8] > 0 ? (media?.get(r[0]) ?? []).map(mediaJson).join(",") : "";
  const standing = r[10] > 0 ? (reactions?.get(r[0]) ?? []).map(reactionJson).join(",") : "";
  return `{"id":${str(r[0])},"phone":${str(r[1])},"message":${str(r[2])},"direction":${str(r[3])},"timestamp":"${isoTime(r[5])}","status":${str(r[4])},"reply_to":${r[7] === null ? "null" : str(r[7])},"media":[${files}],"reactions":[${standing}],"read_at":${msTime(r[11])},"edited_at":${msTime(r[12])},"unsent_at":${msTime(r[13])},"chat_id":${str(directChatId(r[1]))},"line_id":${str(r[14])}${error}${sendAt}}`;
}

/** The records of a page, its files and its reactions each read in one query only when a message has some. */
async function recordsJson(rows: RecordValues[]): Promise<string> {
  const withMedia = rows.filter((r) => r[8] > 0).map((r) => r[0]);
  const withReactions = rows.filter((r) => r[10] > 0).map((r) => r[0]);
  if (withMedia.length === 0 && withReactions.length === 0) return recordsText(rows, undefined, undefined);
  const [media, reactions] = await Promise.all([
    withMedia.length > 0 ? store.mediaOf(withMedia) : undefined,
    withReactions.length > 0 ? store.reactionsOf(withReactions) : undefined,
  ]);
  return recordsText(rows, media, reactions);
}

function recordsText(rows: RecordValues[], media: Files, reactions: Reactions): string {
  let out = "[";
  for (let i = 0; i < rows.length; i++) out += (i ? "," : "") + recordJson(rows[i]!, media, reactions);
  return out + "]";
}

const JSON_TYPE = { "Content-Type": "application/json;charset=utf-8" };
const json = (text: string) => new Response(text, { headers: JSON_TYPE });

const errorResponse = (status: number, code: string, message: string, headers: Record<string, string> = {}, issues?: Issue[], reason?: string) =>
  Response.json({ success: false, error: { code, message, ...(issues ? { issues } : {}), ...(reason ? { reason } : {}) } }, { status, headers });

// ---- routes ---------------------------------------------------------------------------

/** Textwire's loopback network (src/network/loopback.ts): delivered at once. */
const LOOPBACK = "loopback";

function messageInput(b: Record<string, unknown>, issues: Issue[]): { phone: string; message: string } {
  const phoneIssue = phoneProblem(b.phone);
  if (phoneIssue) issues.push({ path: "phone", message: phoneIssue });
  const textIssue = textProblem(b.message);
  if (textIssue) issues.push({ path: "message", message: textIssue });
  return { phone: b.phone as string, message: b.message as string };
}

async function send(req: Request): Promise<Response> {
  const issues: Issue[] = [];
  const { phone, message } = messageInput(await jsonBody(req), issues);
  if (issues.length) throw invalid(issues);
  if (await store.optedOut(phone)) throw new Fail(403, "FORBIDDEN", OPTED_OUT_MESSAGE, {}, undefined, "OPTED_OUT");
  const { id, timestamp } = await store.insert(Bun.randomUUIDv7(), phone, message, "outbound", "queued", null);
  if (await store.markDelivered(id, `${LOOPBACK}:${id}`)) {
    return json(`{"success":true,"message_id":${str(id)},"timestamp":"${isoTime(timestamp)}","status":"delivered"}`);
  }
  const row = await store.get(id);
  if (!row) throw new Error("the sent message vanished");
  return json(`{"success":true,"message_id":${str(row[0])},"timestamp":"${isoTime(row[5])}","status":${str(row[4])}}`);
}

async function webhook(req: Request): Promise<Response> {
  const issues: Issue[] = [];
  const b = await jsonBody(req);
  const { phone, message } = messageInput(b, issues);
  const networkId = b.id;
  if (networkId !== undefined) {
    if (typeof networkId !== "string") issues.push({ path: "id", message: "must be a string" });
    else if (networkId.length < 1) issues.push({ path: "id", message: "must not be empty" });
    else if (networkId.length > 255) issues.push({ path: "id", message: "must be at most 255 characters" });
  }
  if (issues.length) throw invalid(issues);
  const { id, timestamp } = await store.insert(Bun.randomUUIDv7(), phone, message, "inbound", "received", (networkId as string | undefined) ?? null);
  // Textwire writes the opt-out in the message's transaction; a keyword is rare, so here it follows it.
  const action = optOutAction(message);
  if (action) await store.setOptedOut(phone, action === "out");
  return json(`{"success":true,"message_id":${str(id)},"timestamp":"${isoTime(timestamp)}"}`);
}

async function history(url: URL, rawPhone: string): Promise<Response> {
  const phone = phoneFromPath(rawPhone);
  const issues: Issue[] = [];
  if (!isE164(phone)) issues.push({ path: "phone", message: E164_HINT });
  const q = url.searchParams;
  const limit = Math.min(wholeNumber(q.get("limit"), 1, 50, "limit", issues), MAX_PAGE);
  const offset = wholeNumber(q.get("offset"), 0, 0, "offset", issues);
  if (issues.length) throw invalid(issues);
  const { rows, total } = await store.history(phone, limit, offset);
  return json(`{"success":true,"messages":${await recordsJson(rows)},"total":${total},"limit":${limit},"offset":${offset}}`);
}

async function poll(url: URL): Promise<Response> {
  const q = url.searchParams;
  const issues: Issue[] = [];
  const sinceRaw = q.get("since");
  let since = -1;
  if (sinceRaw !== null) {
    const us = parseIsoInstant(sinceRaw);
    if (us === null) issues.push({ path: "since", message: "must be an ISO 8601 date-time, e.g. 2026-11-21T09:30:00.123456Z" });
    else since = us;
  }
  const rawPhone = q.get("phone");
  const phone = rawPhone === null ? null : phoneFromQuery(rawPhone);
  if (phone !== null) {
    if (!isE164(phone)) issues.push({ path: "phone", message: E164_HINT });
  }
  const limit = Math.min(wholeNumber(q.get("limit"), 1, MAX_PAGE, "limit", issues), MAX_PAGE);
  if (issues.length) throw invalid(issues);
  const rows = await store.inboundAfter(since, limit + 1, phone);
  const hasMore = rows.length > limit;
  if (hasMore) rows.pop();
  return json(`{"success":true,"messages":${await recordsJson(rows)},"count":${rows.length},"has_more":${hasMore}}`);
}

type Handler = (req: Request, url: URL) => Promise<Response>;
const POST = "POST";
const GET = "GET, HEAD";

function route(path: string): { allow: string; handler: Handler } | null {
  if (path === "/api/send") return { allow: POST, handler: send };
  if (path === "/webhooks/loopback") return { allow: POST, handler: webhook };
  if (path === "/api/messages/poll") return { allow: GET, handler: (_req, url) => poll(url) };
  if (path.startsWith("/api/messages/") && path.indexOf("/", 14) < 0 && path.length > 14) {
    return { allow: GET, handler: (_req, url) => history(url, path.slice(14)) };
  }
  return null;
}

const server = Bun.serve({
  port: PORT,
  hostname: "127.0.0.1",
  maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  async fetch(req, srv) {
    const url = new URL(req.url);
    if (url.pathname === "/health") return Response.json({ status: "ok" });
    const found = route(url.pathname);
    if (!found) return errorResponse(404, "NOT_FOUND", `no route ${req.method} ${url.pathname}`);
    const allowed = found.allow === POST ? req.method === "POST" : req.method === "GET" || req.method === "HEAD";
    if (!allowed) {
      return errorResponse(405, "METHOD_NOT_SUPPORTED", `method ${req.method} not allowed on ${url.pathname}; use ${found.allow}`, { Allow: found.allow });
    }
    try {
      await authenticate(req, srv.requestIP(req)?.address ?? "unknown");
      return await found.handler(req, url);
    } catch (err) {
      if (err instanceof Fail) return errorResponse(err.status, err.code, err.message, err.headers, err.issues, err.reason);
      console.error(err);
      return errorResponse(500, "INTERNAL_SERVER_ERROR", "internal error; the request may be retried later");
    }
  },
});

console.log(`listening on http://${server.hostname}:${server.port}`);

const stop = () => {
  void server.stop(false).then(async () => {
    await store.close();
    process.exit(0);
  });
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
