// Typed calls to the REST face and the assertions every test file shares.
import { expect } from "bun:test";
import { TRPCClientError } from "@trpc/client";
import { isValidPhoneNumber } from "libphonenumber-js";
import type { Server } from "./harness";

export interface MessageRecord {
  id: string;
  phone: string;
  message: string;
  direction: "outbound" | "inbound";
  timestamp: string;
  status: string;
  error?: string;
  reply_to: string | null;
  media: { id: string; content_type: string; size: number; url: string }[];
}
/** A chat as the API answers it (docs/api.md "Chats"). */
export interface Chat {
  id: string;
  kind: "direct" | "group";
  name: string | null;
  participants: string[];
  created_at: string;
  last_message_at: string | null;
  muted: boolean;
  unread: number;
}

export interface SendResult {
  success: boolean;
  message_id: string;
  timestamp: string;
}
export interface HistoryResult {
  success: boolean;
  messages: MessageRecord[];
  total: number;
  limit: number;
  offset: number;
}
export interface PollResult {
  success: boolean;
  messages: MessageRecord[];
  count: number;
  has_more: boolean;
}
export interface ErrorBody {
  success: boolean;
  error: { code: string; message: string; issues?: unknown };
}

export interface Reply<T> {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body, or undefined when it is not JSON. */
  body: T;
}

export interface CallOptions {
  body?: unknown;
  /** Raw body, sent as is (with the Content-Type given in headers). */
  raw?: BodyInit;
  headers?: Record<string, string>;
  /** Bearer key to send instead of the server's; null sends no Authorization header. */
  key?: string | null;
}

/** One HTTP call; a JSON body gets Content-Type: application/json. */
export async function call<T = unknown>(server: Server, method: string, path: string, opts: CallOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: BodyInit | undefined = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await server.fetch(path, { method, headers, ...(body !== undefined ? { body } : {}) }, opts.key === undefined ? server.apiKey : opts.key);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed as T };
}

function expectOk<T>(reply: Reply<T>, what: string): T {
  if (reply.status !== 200) throw new Error(`${what}: expected 200, got ${reply.status}: ${reply.text.slice(0, 500)}`);
  return reply.body;
}

export async function send(server: Server, phone: string, message: string): Promise<SendResult> {
  return expectOk(await call<SendResult>(server, "POST", "/api/send", { body: { phone, message } }), `send to ${phone}`);
}

/** An inbound message through the loopback network's webhook. */
export async function inbound(server: Server, phone: string, message: string, id?: string): Promise<SendResult> {
  const body = id === undefined ? { phone, message } : { phone, message, id };
  return expectOk(await call<SendResult>(server, "POST", "/webhooks/loopback", { body }), `inbound from ${phone}`);
}

/** GET /api/messages/:phone with the phone percent-encoded and the query as given. */
export async function history(server: Server, phone: string, query = ""): Promise<HistoryResult> {
  const path = `/api/messages/${encodeURIComponent(phone)}${query ? `?${query}` : ""}`;
  return expectOk(await call<HistoryResult>(server, "GET", path), `history of ${phone}`);
}

/** GET /api/messages/poll; params are percent-encoded. */
export async function poll(server: Server, params: Record<string, string | number> = {}): Promise<PollResult> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
  return expectOk(await call<PollResult>(server, "GET", `/api/messages/poll${query ? `?${query}` : ""}`), "poll");
}

/** What a client following the cursor rule got: ids and timestamps in order, and how many polls. */
export interface Followed {
  seen: string[];
  stamps: string[];
  polls: number;
}

/**
 * Polls `server` following the cursor rule (docs/api.md: `since` = the timestamp of the last
 * message got) until it has `expected` messages and a poll that began once `writing()` was
 * false brought nothing more; bounded by `ms` and 20,000 polls.
 */
export async function followPoll(server: Server, params: { phone?: string; limit?: number }, expected: number, writing: () => boolean, ms = 40_000): Promise<Followed> {
  const f: Followed = { seen: [], stamps: [], polls: 0 };
  const deadline = Date.now() + ms;
  let since: string | undefined;
  while (f.polls < 20_000 && Date.now() < deadline) {
    const stillWriting = writing();
    const res = await poll(server, { ...params, ...(since ? { since } : {}) });
    f.polls++;
    for (const m of res.messages) {
      f.seen.push(m.id);
      f.stamps.push(m.timestamp);
    }
    since = res.messages.at(-1)?.timestamp ?? since;
    if (!stillWriting && !res.has_more && f.seen.length >= expected) return f;
    if (res.messages.length === 0) await Bun.sleep(5);
  }
  return f;
}

/** The follower saw exactly `want`, each once, in strictly increasing timestamps. */
export function expectEachOnce(name: string, f: Followed, want: string[]): void {
  const seen = new Set(f.seen);
  const duplicates = f.seen.length - seen.size;
  const missed = want.filter((id) => !seen.has(id));
  if (duplicates || missed.length || f.seen.length !== want.length) {
    throw new Error(`${name} follower: ${f.seen.length} seen of ${want.length}, ${duplicates} twice, ${missed.length} missed (after ${f.polls} polls)`);
  }
  expectStrictlyIncreasing(f.stamps);
}

let nextPhone = Math.floor(Math.random() * 5000);

/** A fresh, valid US number (+1 415 555 xxxx). */
export function newPhone(): string {
  nextPhone = (nextPhone + 1) % 10000;
  const phone = "+1415555" + String(nextPhone).padStart(4, "0");
  if (!isValidPhoneNumber(phone)) throw new Error(`test bug: ${phone} is not valid`);
  return phone;
}

/** A message timestamp: ISO 8601, UTC, microseconds (six fractional digits). */
export const ISO_UTC_US = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** Microseconds since the epoch of a timestamp in that form (Date.parse reads only milliseconds). */
export function micros(iso: string): number {
  return Date.parse(iso) * 1000 + Number(/\.\d{3}(\d{3})Z$/.exec(iso)?.[1] ?? "0");
}
/** RFC 3986 unreserved characters: safe anywhere in a URL without encoding. */
export const URL_SAFE = /^[A-Za-z0-9._~-]+$/;

export function expectTimestamp(ts: unknown): void {
  expect(typeof ts).toBe("string");
  expect(ts as string).toMatch(ISO_UTC_US);
  expect(new Date(ts as string).toISOString().slice(0, 23)).toBe((ts as string).slice(0, 23));
}

export function expectSendResult(result: SendResult): void {
  expect(result.success).toBe(true);
  expect(typeof result.message_id).toBe("string");
  expect(result.message_id).toMatch(URL_SAFE);
  expectTimestamp(result.timestamp);
}

export function expectRecord(record: MessageRecord, expected: Partial<MessageRecord>): void {
  expect(record.id).toMatch(URL_SAFE);
  expectTimestamp(record.timestamp);
  expect(record).toMatchObject(expected);
}

/** Strictly increasing ISO timestamps (which, at µs precision, means at least 1 µs apart). */
export function expectStrictlyIncreasing(timestamps: string[]): void {
  for (let i = 1; i < timestamps.length; i++) {
    const prev = micros(timestamps[i - 1]!);
    const cur = micros(timestamps[i]!);
    if (!(cur > prev)) throw new Error(`timestamps not strictly increasing at ${i}: ${timestamps[i - 1]} then ${timestamps[i]}`);
  }
}

const LEAKS: [RegExp, string][] = [
  [/(^|\\n)\s*at\s+\S+/m, "a stack frame"],
  [/\bat (?:\S+ )?\(?(?:file:\/\/|\/)[^\s)]*:\d+:\d+/, "a stack frame"],
  [/node_modules/i, "node_modules"],
  [/sqlite/i, "SQLite"],
  [/\bSQL\b/i, "SQL"],
  [/\b(SELECT|INSERT INTO|UPDATE|DELETE FROM)\b/, "SQL text"],
  [/\/work\/|\/tmp\/|\/src\/|\.ts\b/, "a file path"],
];

/** Text that must never appear in a response, whatever NODE_ENV is (docs/api.md). */
export function expectNoLeak(text: string, secrets: string[] = []): void {
  for (const [pattern, what] of LEAKS) {
    if (pattern.test(text)) throw new Error(`response leaks ${what}: ${text.slice(0, 800)}`);
  }
  for (const secret of secrets) {
    if (secret && text.includes(secret)) throw new Error(`response contains a key: ${text.slice(0, 800)}`);
  }
}

/** The error envelope `{ success: false, error: { code, message } }` with the given status and code. */
export function expectError(reply: Reply<unknown>, status: number, code: string, secrets: string[] = []): ErrorBody {
  if (reply.status !== status) {
    throw new Error(`expected ${status} ${code}, got ${reply.status}: ${reply.text.slice(0, 500)}`);
  }
  expect(reply.headers.get("content-type") ?? "").toContain("application/json");
  const body = reply.body as ErrorBody;
  expect(body).toBeObject();
  expect(body.success).toBe(false);
  expect(body.error).toBeObject();
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe("string");
  expect(body.error.message.length).toBeGreaterThan(0);
  // Every 400 lists its issues, each a field (or `body`) and what is wrong with it.
  if (status === 400) {
    const issues = body.error.issues as { path?: unknown; message?: unknown }[] | undefined;
    expect([Array.isArray(issues) && issues.length > 0 && issues.every((i) => typeof i.path === "string" && typeof i.message === "string"), reply.text]).toEqual([true, reply.text]);
  }
  expectNoLeak(reply.text, secrets);
  return body;
}

/** A 400 whose message names the field. */
export function expectBadField(reply: Reply<unknown>, field: string, secrets: string[] = []): void {
  const body = expectError(reply, 400, "BAD_REQUEST", secrets);
  expect(body.error.message.toLowerCase()).toContain(field.toLowerCase());
}

/** The tRPC error a call fails with; fails the test if the call succeeds. */
export async function trpcFailure(promise: Promise<unknown>): Promise<{ code: unknown; message: string }> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(TRPCClientError);
    const e = err as { data?: { code?: unknown }; message: string };
    return { code: e.data?.code, message: e.message };
  }
  throw new Error("expected the call to fail");
}
