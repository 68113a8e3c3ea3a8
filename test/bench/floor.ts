/**
 * The floor: the smallest honest implementation of Textwire's four hot routes, written
 * only to be measured against (`bun run bench`). Raw Bun.serve and bun:sqlite prepared
 * statements, no framework; the same rules as the real server:
 *
 *   POST /api/send            E.164 phone + message text rules; stored `queued` under
 *                             BEGIN IMMEDIATE (timestamp in µs: max(timestamp)+1 vs now), then the
 *                             loopback network "delivers" it (status update)
 *   POST /webhooks/loopback   the same, inbound `received`, deduplicated by network `id`
 *   GET  /api/messages/:phone newest first, total, limit 1.. (clamped to 100), offset >= 0
 *   GET  /api/messages/poll   inbound, oldest first, since (exclusive), phone, limit, has_more
 *
 * Same auth (SHA-256 of the bearer key, timingSafeEqual against API_KEYS, else a prepared
 * lookup by hash in api_keys; failed attempts limited per address), same SQLite settings
 * (WAL, synchronous=NORMAL, busy_timeout), same schema (the migrations in drizzle/sqlite/*.sql),
 * same JSON shapes and error envelope. Not a product: no tRPC, OpenAPI, idempotency keys,
 * rate limits per key or workflows.
 *
 *   PORT=0 DATABASE_URL=/tmp/floor.db API_KEYS=... bun test/bench/floor.ts
 */
import { Database } from "bun:sqlite";
import { createHash, timingSafeEqual } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { isPossiblePhoneNumber } from "libphonenumber-js";

const PORT = Number(process.env.PORT ?? 3000);
const DATABASE_URL = process.env.DATABASE_URL ?? "./data/floor.db";
const API_KEYS = (process.env.API_KEYS ?? "").split(",").map((k) => k.trim()).filter(Boolean);
const MAX_MESSAGE_LENGTH = Number(process.env.MAX_MESSAGE_LENGTH ?? 10000);
const MAX_BODY_BYTES = 1024 * 1024;
const MAX_PAGE = 100;
const MIGRATIONS = resolve(import.meta.dir, "../../drizzle/sqlite");

// ---- database -------------------------------------------------------------------------

const db = new Database(DATABASE_URL, { create: true, strict: true });
db.run("PRAGMA journal_mode = WAL");
db.run("PRAGMA synchronous = NORMAL");
db.run("PRAGMA busy_timeout = 5000");
db.run("PRAGMA foreign_keys = ON");

/** The same migrations, split on drizzle's breakpoints; applied once (counted in user_version). */
function migrate() {
  const files = readdirSync(MIGRATIONS).filter((f) => f.endsWith(".sql")).sort();
  let applied = (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  // A file Textwire (drizzle) migrated already: drizzle counts its own migrations.
  const drizzleTable = db.query("SELECT 1 FROM sqlite_master WHERE name = '__drizzle_migrations'").get();
  if (applied === 0 && drizzleTable) applied = (db.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number }).n;
  files.slice(applied).forEach((file, i) => {
    const statements = readFileSync(join(MIGRATIONS, file), "utf8").split("--> statement-breakpoint");
    db.transaction(() => {
      for (const s of statements) if (s.trim()) db.run(s);
      db.run(`PRAGMA user_version = ${applied + i + 1}`);
    }).immediate();
  });
}
migrate();

interface Row {
  id: string;
  phone: string;
  body: string;
  direction: "inbound" | "outbound";
  status: string;
  timestamp: number;
  network: string;
  network_id: string | null;
  error: string | null;
  updated_at: number;
}

const keyByHash = db.query<{ id: string }, { hash: string }>("SELECT id FROM api_keys WHERE hash = $hash AND revoked_at IS NULL");
const lastTimestamp = db.query<{ ts: number | null }, []>("SELECT max(timestamp) AS ts FROM messages");
const insertRow = db.query(
  `INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at)
   VALUES ($id, $phone, $body, $direction, $status, $timestamp, $network, $network_id, NULL, $timestamp)`,
);
const byNetworkId = db.query<Row, { network: string; direction: string; network_id: string }>(
  "SELECT * FROM messages WHERE network = $network AND direction = $direction AND network_id = $network_id",
);
const markDelivered = db.query(
  "UPDATE messages SET status = 'delivered', network_id = $network_id, updated_at = $now WHERE id = $id AND status IN ('queued', 'sent')",
);
const historyPage = db.query<Row, { phone: string; limit: number; offset: number }>(
  "SELECT * FROM messages WHERE phone = $phone ORDER BY timestamp DESC, id DESC LIMIT $limit OFFSET $offset",
);
const historyTotal = db.query<{ n: number }, { phone: string }>("SELECT count(*) AS n FROM messages WHERE phone = $phone");
const inboundAfter = db.query<Row, { since: number; limit: number }>(
  "SELECT * FROM messages WHERE direction = 'inbound' AND timestamp > $since ORDER BY timestamp LIMIT $limit",
);
const inboundFromAfter = db.query<Row, { phone: string; since: number; limit: number }>(
  "SELECT * FROM messages WHERE direction = 'inbound' AND phone = $phone AND timestamp > $since ORDER BY timestamp LIMIT $limit",
);

/** Microseconds since the epoch, the unit of Textwire's message times. */
const nowUs = () => Math.floor((performance.timeOrigin + performance.now()) * 1000);
/** ISO 8601 with 6 fractional digits, as Textwire writes a time. */
function isoUs(us: number): string {
  const ms = Math.floor(us / 1000);
  return new Date(ms).toISOString().replace(/Z$/, `${String(us - ms * 1000).padStart(3, "0")}Z`);
}

/** Stores a message under the write lock with the next timestamp (one clock for all). */
const store = db.transaction((m: { phone: string; body: string; direction: "inbound" | "outbound"; status: string; networkId: string | null }) => {
  if (m.networkId !== null) {
    const existing = byNetworkId.get({ network: "loopback", direction: m.direction, network_id: m.networkId });
    if (existing) return { id: existing.id, timestamp: existing.timestamp };
  }
  const timestamp = Math.max(nowUs(), (lastTimestamp.get()?.ts ?? 0) + 1);
  const id = Bun.randomUUIDv7();
  insertRow.run({ id, phone: m.phone, body: m.body, direction: m.direction, status: m.status, timestamp, network: "loopback", network_id: m.networkId });
  return { id, timestamp };
});

const readHistory = db.transaction((phone: string, limit: number, offset: number) => ({
  rows: historyPage.all({ phone, limit, offset }),
  total: historyTotal.get({ phone })?.n ?? 0,
}));

// ---- rules ----------------------------------------------------------------------------

class Fail extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}
const bad = (message: string) => new Fail(400, "BAD_REQUEST", message);

const E164 = /^\+[1-9]\d{6,14}$/;
const isE164 = (v: unknown): v is string => typeof v === "string" && E164.test(v) && isPossiblePhoneNumber(v);
const FORBIDDEN_CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

function checkPhone(v: unknown, field = "phone"): string {
  if (v === undefined) throw bad(`${field}: is required`);
  if (typeof v !== "string") throw bad(`${field}: must be a string`);
  if (!isE164(v)) throw bad(`${field}: must be E.164, e.g. +14155550123`);
  return v;
}

function checkText(v: unknown): string {
  if (v === undefined) throw bad("message: is required");
  if (typeof v !== "string") throw bad("message: must be a string");
  if (v.length === 0) throw bad("message: must not be empty");
  if (!v.isWellFormed()) throw bad("message: must be valid Unicode text (no lone surrogates)");
  if (FORBIDDEN_CONTROL.test(v)) throw bad("message: must not contain control characters other than tab, LF and CR");
  if (v.trim().length === 0) throw bad("message: must not be only whitespace");
  if (v.length > MAX_MESSAGE_LENGTH) {
    let n = 0;
    for (const _ of v) n++;
    if (n > MAX_MESSAGE_LENGTH) throw bad(`message: must be at most ${MAX_MESSAGE_LENGTH} characters (got ${n})`);
  }
  return v;
}

function wholeNumber(raw: string | null, field: string, min: number, fallback: number): number {
  if (raw === null) return fallback;
  if (!/^\s*-?\d+\s*$/.test(raw)) throw bad(`${field}: must be a whole number`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw bad(`${field}: must be a whole number`);
  if (n < min) throw bad(`${field}: must be at least ${min}`);
  return n;
}

const ISO = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;
function parseSince(raw: string): number {
  const m = ISO.exec(raw.trim());
  if (!m) throw bad("since: must be an ISO 8601 date-time, e.g. 2026-11-21T09:30:00.000Z");
  let v = raw.trim().replace(",", ".");
  const fraction = /\.(\d+)/.exec(v)?.[1] ?? "";
  v = v.replace(/\.\d+/, "");
  if (!v.includes("T")) v += "T00:00:00Z";
  else if (!m[1]) v += "Z";
  const ms = Date.parse(v.replace(/([+-]\d{2})(\d{2})$/, "$1:$2").replace(/([+-]\d{2})$/, "$1:00"));
  if (!Number.isFinite(ms)) throw bad("since: must be an ISO 8601 date-time, e.g. 2026-11-21T09:30:00.000Z");
  return ms * 1000 + Number(fraction.slice(0, 6).padEnd(6, "0"));
}

const envHashes = API_KEYS.map((k) => createHash("sha256").update(k).digest());
const BEARER = /^bearer +(\S+) *$/i;
/** Failed authentications per address: 20 a minute. */
const failures = new Map<string, { n: number; since: number }>();

function authenticate(req: Request, ip: string) {
  const f = failures.get(ip);
  if (f && Date.now() - f.since > 60_000) failures.delete(ip);
  else if (f && f.n >= 20) throw new Fail(429, "TOO_MANY_REQUESTS", "too many failed authentication attempts from this address; try again later", { "Retry-After": "60" });
  const key = BEARER.exec(req.headers.get("authorization") ?? "")?.[1];
  if (key) {
    const hash = createHash("sha256").update(key).digest();
    let match = false;
    for (const h of envHashes) if (timingSafeEqual(h, hash)) match = true;
    if (match || keyByHash.get({ hash: hash.toString("hex") })) return;
  }
  const entry = failures.get(ip) ?? { n: 0, since: Date.now() };
  entry.n++;
  failures.set(ip, entry);
  throw new Fail(401, "UNAUTHORIZED", key ? "authorization: invalid API key" : "authorization: missing header, expected 'Authorization: Bearer <API_KEY>'", {
    "WWW-Authenticate": "Bearer",
  });
}

async function jsonBody(req: Request): Promise<Record<string, unknown>> {
  const type = req.headers.get("content-type")?.toLowerCase() ?? "";
  if (!type.startsWith("application/json")) throw new Fail(415, "UNSUPPORTED_MEDIA_TYPE", "content-type: must be application/json");
  if (Number(req.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) throw new Fail(413, "PAYLOAD_TOO_LARGE", "body: too large");
  const bytes = await req.bytes();
  if (bytes.length > MAX_BODY_BYTES) throw new Fail(413, "PAYLOAD_TOO_LARGE", "body: too large");
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw bad("body: malformed JSON or not UTF-8");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw bad("body: must be a JSON object");
  return value as Record<string, unknown>;
}

const toRecord = (r: Row) => {
  const rec: Record<string, string> = {
    id: r.id,
    phone: r.phone,
    message: r.body,
    direction: r.direction,
    timestamp: isoUs(r.timestamp),
    status: r.status,
  };
  if (r.error) rec.error = r.error;
  return rec;
};

// ---- routes ---------------------------------------------------------------------------

type Handler = (req: Request, url: URL) => Response | Promise<Response>;

async function send(req: Request): Promise<Response> {
  const b = await jsonBody(req);
  const phone = checkPhone(b.phone);
  const body = checkText(b.message);
  const { id, timestamp } = store.immediate({ phone, body, direction: "outbound", status: "queued", networkId: null });
  // The loopback network delivers at once.
  markDelivered.run({ id, network_id: `loopback:${id}`, now: nowUs() });
  return Response.json({ success: true, message_id: id, timestamp: isoUs(timestamp) });
}

async function webhook(req: Request): Promise<Response> {
  const b = await jsonBody(req);
  const phone = checkPhone(b.phone);
  const body = checkText(b.message);
  let networkId: string | null = null;
  if (b.id !== undefined) {
    if (typeof b.id !== "string") throw bad("id: must be a string");
    if (b.id.length < 1 || b.id.length > 255) throw bad("id: must be 1 to 255 characters");
    networkId = b.id;
  }
  const { id, timestamp } = store.immediate({ phone, body, direction: "inbound", status: "received", networkId });
  return Response.json({ success: true, message_id: id, timestamp: isoUs(timestamp) });
}

function history(_req: Request, url: URL, rawPhone: string): Response {
  let phone = rawPhone;
  try {
    phone = decodeURIComponent(rawPhone);
  } catch {}
  checkPhone(phone);
  const limit = Math.min(wholeNumber(url.searchParams.get("limit"), "limit", 1, 50), MAX_PAGE);
  const offset = wholeNumber(url.searchParams.get("offset"), "offset", 0, 0);
  const { rows, total } = readHistory(phone, limit, offset);
  return Response.json({ success: true, messages: rows.map(toRecord), total, limit, offset });
}

function poll(_req: Request, url: URL): Response {
  const q = url.searchParams;
  const sinceRaw = q.get("since");
  const since = sinceRaw === null ? -1 : parseSince(sinceRaw);
  const phoneRaw = q.get("phone");
  const phone = phoneRaw === null ? null : checkPhone(/^ \d/.test(phoneRaw) ? `+${phoneRaw.slice(1)}` : phoneRaw);
  const limit = Math.min(wholeNumber(q.get("limit"), "limit", 1, MAX_PAGE), MAX_PAGE);
  const rows = phone ? inboundFromAfter.all({ phone, since, limit: limit + 1 }) : inboundAfter.all({ since, limit: limit + 1 });
  const has_more = rows.length > limit;
  if (has_more) rows.pop();
  return Response.json({ success: true, messages: rows.map(toRecord), count: rows.length, has_more });
}

function route(method: string, path: string): { allow: string; handler: Handler } | null {
  if (path === "/api/send") return { allow: "POST", handler: send };
  if (path === "/webhooks/loopback") return { allow: "POST", handler: webhook };
  if (path === "/api/messages/poll") return { allow: "GET", handler: poll };
  const m = /^\/api\/messages\/([^/]+)$/.exec(path);
  if (m) return { allow: "GET", handler: (req, url) => history(req, url, m[1]!) };
  void method;
  return null;
}

const errorResponse = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  Response.json({ success: false, error: { code, message } }, { status, headers });

const server = Bun.serve({
  port: PORT,
  hostname: "127.0.0.1",
  maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  async fetch(req, srv) {
    const url = new URL(req.url);
    if (url.pathname === "/health") return Response.json({ status: "ok" });
    const found = route(req.method, url.pathname);
    if (!found) return errorResponse(404, "NOT_FOUND", `no route ${req.method} ${url.pathname}`);
    if (req.method !== found.allow) {
      return errorResponse(405, "METHOD_NOT_SUPPORTED", `method ${req.method} not allowed on ${url.pathname}; use ${found.allow}`, { Allow: found.allow });
    }
    try {
      authenticate(req, srv.requestIP(req)?.address ?? "unknown");
      return await found.handler(req, url);
    } catch (err) {
      if (err instanceof Fail) return errorResponse(err.status, err.code, err.message, err.headers);
      console.error(err);
      return errorResponse(500, "INTERNAL_SERVER_ERROR", "internal error; the request may be retried later");
    }
  },
});

console.log(`listening on http://${server.hostname}:${server.port}`);

const stop = () => {
  void server.stop(false).then(() => {
    db.close();
    process.exit(0);
  });
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
