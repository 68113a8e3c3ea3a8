// The OpenAPI document each real server serves (one per NETWORK: loopback, twilio,
// bluebubbles) passes `spectral lint` (.spectral.yaml, spectral:oas) and `redocly lint`
// (redocly.yaml, recommended) with no problem at all, and the server's real answers match
// it: each status is documented on its operation, each body fits the documented schema,
// each header the server sends is documented on that response, each required one is sent.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020";
import { postBlueBubblesWebhook, startFakeBlueBubbles, type FakeBlueBubbles } from "../support/fake-bluebubbles";
import { postTwilioWebhook, signTwilioRequest, startFakeTwilio, twilioInboundParams, twilioSid, twilioStatusParams, type FakeTwilio } from "../support/fake-twilio";
import { newApiKey, ROOT, startServer, type EnvOverlay, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

type Json = Record<string, any>;

/** No telemetry, no update check: the linters never reach the network. */
const OFFLINE = { REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_UPDATE_NOTIFIER: "1", CI: "true" };
const LINT_MS = 60_000;

async function runLinter(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(["bun", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...OFFLINE },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), LINT_MS);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** Spectral's findings (every severity) for the document in `file`. */
async function spectral(file: string): Promise<{ code: string; message: string; path: string[] }[]> {
  const bin = join(ROOT, "node_modules/@stoplight/spectral-cli/dist/index.js");
  const results = `${file}.spectral.json`;
  const out = await runLinter([bin, "lint", file, "--ruleset", join(ROOT, ".spectral.yaml"), "--format", "json", "--output", results, "--fail-severity", "hint"]);
  const written = Bun.file(results);
  if (!(await written.exists())) throw new Error(`spectral wrote no result (exit ${out.code}):\n${out.stdout}\n${out.stderr}`);
  return written.json();
}

/** Redocly's findings (every severity) for the document in `file`. */
async function redocly(file: string): Promise<{ ruleId: string; message: string; severity: string }[]> {
  const bin = join(ROOT, "node_modules/@redocly/cli/bin/cli.js");
  const out = await runLinter([bin, "lint", file, "--config", join(ROOT, "redocly.yaml"), "--format", "json"]);
  const start = out.stdout.indexOf("{");
  if (start === -1) throw new Error(`redocly printed no result (exit ${out.code}):\n${out.stdout}\n${out.stderr}`);
  return (JSON.parse(out.stdout.slice(start)) as { problems: { ruleId: string; message: string; severity: string }[] }).problems;
}

/** Every response header Textwire may send that the document must show. */
const TRACKED = ["X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After", "WWW-Authenticate", "Allow", "Idempotent-Replayed"];

function resolve(doc: Json, node: Json): Json {
  if (typeof node?.$ref !== "string") return node;
  return (node.$ref as string)
    .slice(2)
    .split("/")
    .reduce((n: Json, key) => n[key.replaceAll("~1", "/").replaceAll("~0", "~")], doc);
}

/** Checks one real answer against the operation `method path` of the document. */
async function expectDocumented(doc: Json, path: string, method: string, res: Response): Promise<void> {
  const where = `${method.toUpperCase()} ${path} → ${res.status}`;
  const op = doc.paths?.[path]?.[method];
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
  const documented = op.responses?.[String(res.status)];
  if (!documented) throw new Error(`${where}: status not documented (documented: ${Object.keys(op.responses).join(", ")})`);
  const response = resolve(doc, documented);

  const headers = Object.fromEntries(Object.entries((response.headers ?? {}) as Json).map(([name, h]) => [name.toLowerCase(), resolve(doc, h)]));
  for (const name of TRACKED) {
    if (res.headers.has(name) && !headers[name.toLowerCase()]) throw new Error(`${where}: header ${name} sent but not documented`);
  }
  for (const [name, h] of Object.entries(headers)) {
    if (h.required && !res.headers.has(name)) throw new Error(`${where}: documented required header ${name} not sent`);
  }

  const text = await res.text();
  const content = (response.content ?? {}) as Json;
  if (Object.keys(content).length === 0 || method === "head") {
    expect(text).toBe("");
    return;
  }
  const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
  const media = content[type];
  if (!media) throw new Error(`${where}: content type ${type} not documented (documented: ${Object.keys(content).join(", ")})`);
  if (type !== "application/json") return;
  const validate = compile(doc, media.schema);
  if (!validate(JSON.parse(text))) throw new Error(`${where}: body does not fit the documented schema: ${JSON.stringify(validate.errors)}\n${text}`);
}

/** A JSON Schema validator for a schema of the document, its component refs resolved. */
function compile(doc: Json, schema: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const defs = JSON.parse(JSON.stringify(doc.components?.schemas ?? {}).replaceAll("#/components/schemas/", "#/$defs/"));
  const root = JSON.parse(JSON.stringify(schema).replaceAll("#/components/schemas/", "#/$defs/"));
  return ajv.compile({ ...root, $defs: defs });
}

/** Fetches /openapi.json from the server, lints it with both tools, and returns it. */
function lintSuite(name: string, get: () => Server) {
  let doc: Json;
  let dir: string;
  let file: string;
  beforeAll(async () => {
    const res = await get().fetch("/openapi.json", {}, null);
    expect(res.status).toBe(200);
    doc = (await res.json()) as Json;
    dir = mkdtempSync(join(tmpdir(), "textwire-openapi-"));
    file = join(dir, `${name}.json`);
    await Bun.write(file, JSON.stringify(doc, null, 2));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test(`NETWORK=${name}: spectral lint (spectral:oas) finds nothing`, async () => {
    expect(await spectral(file)).toEqual([]);
  });
  test(`NETWORK=${name}: redocly lint (recommended) finds nothing`, async () => {
    expect(await redocly(file)).toEqual([]);
  });
  return () => doc;
}

const PHONE = "+14155550123";
const json = (body: unknown, extra: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...extra },
  body: JSON.stringify(body),
});
/** Rate limiting on (so its headers are sent) but never reached by these tests. */
const LIMITED: EnvOverlay = { RATE_LIMIT_PER_MINUTE: "6000", RATE_LIMIT_BURST: "1000" };

describe("NETWORK=loopback", () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer({ env: LIMITED });
  });
  afterAll(() => server?.kill());
  const doc = lintSuite("loopback", () => server);

  test("every answer of every route is documented: status, headers and body", async () => {
    const d = doc();
    const check = async (path: string, method: string, res: Promise<Response>) => expectDocumented(d, path, method, await res);

    await check("/api/send", "post", server.fetch("/api/send", json({ phone: PHONE, message: "hello" })));
    const key = `k-${crypto.randomUUID()}`;
    await check("/api/send", "post", server.fetch("/api/send", json({ phone: PHONE, message: "once" }, { "idempotency-key": key })));
    const replay = await server.fetch("/api/send", json({ phone: PHONE, message: "once" }, { "idempotency-key": key }));
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    await expectDocumented(d, "/api/send", "post", replay);
    await check("/api/send", "post", server.fetch("/api/send", json({ phone: PHONE, message: "other" }, { "idempotency-key": key }))); // 409
    await check("/api/send", "post", server.fetch("/api/send", json({ phone: "555", message: "x" }))); // 400
    await check("/api/send", "post", server.fetch("/api/send", json({ phone: PHONE, message: "x" }, { "idempotency-key": "\u00e9" }))); // 400
    await check("/api/send", "post", server.fetch("/api/send", { method: "POST", headers: { "content-type": "text/plain" }, body: "hi" })); // 415
    await check("/api/send", "post", server.fetch("/api/send", { ...json({}), body: `{"message":"${"a".repeat(1024 * 1024)}"}` })); // 413
    await check("/api/send", "post", server.fetch("/api/send", { ...json({}), body: "{" })); // 400 malformed
    await check("/api/send", "post", server.fetch("/api/send", json({ phone: PHONE, message: "x" }), null)); // 401
    await check("/api/send", "post", server.fetch("/api/send", { method: "PUT" })); // 405

    await check("/api/generate", "post", server.fetch("/api/generate", json({ phone: PHONE, context: [{ role: "user", content: "hi" }] }))); // 503
    await check("/api/generate", "post", server.fetch("/api/generate", json({ phone: PHONE, context: [] }))); // 400

    await check("/webhooks/loopback", "post", server.fetch("/webhooks/loopback", json({ phone: PHONE, message: "in", id: "n1" })));
    await check("/webhooks/loopback", "post", server.fetch("/webhooks/loopback", json({ phone: PHONE })));

    const encoded = encodeURIComponent(PHONE);
    await check("/api/messages/{phone}", "get", server.fetch(`/api/messages/${encoded}?limit=2&offset=1`));
    for (const bad of ["limit=0x10", "limit=1.0", "limit=abc", "offset=-1"]) {
      const res = await server.fetch(`/api/messages/${encoded}?${bad}`);
      expect(res.status).toBe(400);
      await expectDocumented(d, "/api/messages/{phone}", "get", res);
    }
    await check("/api/messages/poll", "get", server.fetch(`/api/messages/poll?since=2026-01-01T00:00:00&phone=${encoded}&limit=5`));
    await check("/api/messages/poll", "get", server.fetch("/api/messages/poll?since=yesterday")); // 400
    await check("/api/messages/poll", "get", server.fetch("/api/messages/poll", {}, "tw_wrong_key_aaaaaaaaaaaaaaaaaaaaaaaa")); // 401
    await check("/api/messages/poll", "get", server.fetch("/api/messages/poll", { method: "DELETE" })); // 405

    // Scheduled sends: send_at, the waiting list, cancel.
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await server.fetch("/api/send", json({ phone: PHONE, message: "later", send_at: later }));
    const scheduledId = ((await scheduled.clone().json()) as Json).message_id as string;
    await expectDocumented(d, "/api/send", "post", scheduled);
    await check("/api/send", "post", server.fetch("/api/send", json({ phone: PHONE, message: "x", send_at: "2020-01-01T00:00:00Z" }))); // 400
    await check("/api/messages/scheduled", "get", server.fetch("/api/messages/scheduled?limit=5"));
    await check("/api/messages/scheduled", "get", server.fetch("/api/messages/scheduled?offset=-1")); // 400
    await check("/api/messages/scheduled", "get", server.fetch("/api/messages/scheduled", { method: "DELETE" })); // 405
    await check("/api/messages/{id}/cancel", "post", server.fetch(`/api/messages/${scheduledId}/cancel`, { method: "POST" }));
    await check("/api/messages/{id}/cancel", "post", server.fetch(`/api/messages/${scheduledId}/cancel`, { method: "POST" })); // 409
    await check("/api/messages/{id}/cancel", "post", server.fetch("/api/messages/nope/cancel", { method: "POST" })); // 404
    await check("/api/messages/{id}/cancel", "post", server.fetch("/api/messages/nope/cancel", { method: "POST" }, null)); // 401

    // Outbound webhook endpoints and events (a public literal address: no DNS, no ALLOW_PRIVATE_URLS).
    const HOOK = "https://93.184.215.14/hooks/textwire";
    const created = await server.fetch("/api/webhook-endpoints", json({ url: HOOK, events: ["message.received"], description: "lint" }));
    expect(created.status).toBe(201);
    const endpoint = ((await created.clone().json()) as Json).endpoint as Json;
    await expectDocumented(d, "/api/webhook-endpoints", "post", created);
    await check("/api/webhook-endpoints", "post", server.fetch("/api/webhook-endpoints", json({ url: "http://10.0.0.1/" }))); // 400
    await check("/api/webhook-endpoints", "post", server.fetch("/api/webhook-endpoints", { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" })); // 415
    await check("/api/webhook-endpoints", "post", server.fetch("/api/webhook-endpoints", json({ url: HOOK }), null)); // 401
    await check("/api/webhook-endpoints", "get", server.fetch("/api/webhook-endpoints"));
    await check("/api/webhook-endpoints", "get", server.fetch("/api/webhook-endpoints", { method: "PUT" })); // 405
    const item = `/api/webhook-endpoints/${endpoint.id}`;
    const missing = "/api/webhook-endpoints/we_00000000000000000000000000000000";
    await check("/api/webhook-endpoints/{id}", "get", server.fetch(item));
    await check("/api/webhook-endpoints/{id}", "get", server.fetch(missing)); // 404
    await check("/api/webhook-endpoints/{id}", "patch", server.fetch(item, { ...json({ enabled: false }), method: "PATCH" }));
    await check("/api/webhook-endpoints/{id}", "patch", server.fetch(item, { ...json({ enabled: true, events: null }), method: "PATCH" }));
    await check("/api/webhook-endpoints/{id}", "patch", server.fetch(item, { ...json({ events: [] }), method: "PATCH" })); // 400
    await check("/api/webhook-endpoints/{id}", "patch", server.fetch(missing, { ...json({ enabled: true }), method: "PATCH" })); // 404
    await check("/api/webhook-endpoints/{id}/rotate-secret", "post", server.fetch(`${item}/rotate-secret`, { method: "POST" }));
    await check("/api/webhook-endpoints/{id}/rotate-secret", "post", server.fetch(`${missing}/rotate-secret`, { method: "POST" })); // 404
    await server.fetch("/webhooks/loopback", json({ phone: PHONE, message: "an event" }));
    const listed = await server.fetch(`${item}/deliveries?status=pending&limit=10`);
    const [delivery] = ((await listed.clone().json()) as Json).deliveries as Json[];
    expect(delivery).toBeDefined();
    await expectDocumented(d, "/api/webhook-endpoints/{id}/deliveries", "get", listed);
    await check("/api/webhook-endpoints/{id}/deliveries", "get", server.fetch(`${item}/deliveries?status=done`)); // 400
    await check("/api/webhook-endpoints/{id}/deliveries", "get", server.fetch(`${missing}/deliveries`)); // 404
    const retry = `${item}/deliveries/${delivery!.id}/retry`;
    await check("/api/webhook-endpoints/{id}/deliveries/{delivery_id}/retry", "post", server.fetch(retry, { method: "POST" }));
    await check("/api/webhook-endpoints/{id}/deliveries/{delivery_id}/retry", "post", server.fetch(`${item}/deliveries/dlv_none/retry`, { method: "POST" })); // 404
    await check("/api/webhook-endpoints/{id}/replay", "post", server.fetch(`${item}/replay`, json({ since: "2026-01-01T00:00:00Z" })));
    await check("/api/webhook-endpoints/{id}/replay", "post", server.fetch(`${item}/replay`, json({ since: "soon" }))); // 400
    await check("/api/webhook-endpoints/{id}/replay", "post", server.fetch(`${missing}/replay`, json({ since: "2026-01-01T00:00:00Z" }))); // 404
    await server.fetch("/api/send", json({ phone: PHONE, message: "a status event" }));
    await check("/api/events", "get", server.fetch("/api/events?limit=100"));
    await check("/api/events", "get", server.fetch("/api/events?type=message.status_updated&since=2026-01-01T00:00:00Z"));
    await check("/api/events", "get", server.fetch("/api/events?type=nope")); // 400
    await check("/api/webhook-endpoints/{id}", "delete", server.fetch(item, { method: "DELETE" }));
    await check("/api/webhook-endpoints/{id}", "delete", server.fetch(item, { method: "DELETE" })); // 404

    await check("/health", "get", server.fetch("/health", {}, null));
    await check("/health", "head", server.fetch("/health", { method: "HEAD" }, null));
    await check("/health", "get", server.fetch("/health", { method: "POST" }, null)); // 405
    await check("/health/live", "get", server.fetch("/health/live", {}, null));
    await check("/health/ready", "get", server.fetch("/health/ready", {}, null));
    await check("/health/ready", "head", server.fetch("/health/ready", { method: "HEAD" }, null));
  });

  test("429 answers are documented, with Retry-After and the RateLimit headers", async () => {
    const limited = await startServer({ env: { RATE_LIMIT_PER_MINUTE: "1", RATE_LIMIT_BURST: "1" } });
    try {
      const d = (await (await limited.fetch("/openapi.json", {}, null)).json()) as Json;
      await expectDocumented(d, "/api/messages/poll", "get", await limited.fetch("/api/messages/poll"));
      const res = await limited.fetch("/api/messages/poll");
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).not.toBeNull();
      await expectDocumented(d, "/api/messages/poll", "get", res);
      const send = await limited.fetch("/api/send", json({ phone: PHONE, message: "x" }));
      expect(send.status).toBe(429);
      await expectDocumented(d, "/api/send", "post", send);
    } finally {
      limited.kill();
    }
  });
});

describe("NETWORK=twilio", () => {
  const PUBLIC_URL = "https://textwire.example.com";
  const FROM = "+14155550100";
  let fake: FakeTwilio;
  let server: Server;
  beforeAll(async () => {
    fake = startFakeTwilio();
    server = await startServer({
      env: {
        ...LIMITED,
        NETWORK: "twilio",
        TWILIO_API_URL: fake.url,
        TWILIO_ACCOUNT_SID: fake.accountSid,
        TWILIO_AUTH_TOKEN: fake.authToken,
        TWILIO_FROM: FROM,
        PUBLIC_URL,
      },
    });
  });
  afterAll(() => {
    server?.kill();
    fake?.stop();
  });
  const doc = lintSuite("twilio", () => server);

  test("the webhooks take the form the document shows, and answer what it says", async () => {
    const d = doc();
    const inbound = twilioInboundParams({ accountSid: fake.accountSid, from: PHONE, to: FROM, body: "hello" });
    const signed = (path: string, params: Record<string, string>) => signTwilioRequest(fake.authToken, PUBLIC_URL + path, params);
    const post = async (path: string, params: Record<string, string>, signature: string | null) => {
      const reply = await postTwilioWebhook(server.url, path, params, signature);
      return new Response(reply.status === 204 ? null : reply.text, { status: reply.status, headers: reply.headers });
    };

    // The documented form: application/x-www-form-urlencoded, the fields it lists, signed.
    const form = d.paths["/webhooks/twilio"].post.requestBody.content;
    expect(Object.keys(form)).toEqual(["application/x-www-form-urlencoded"]);
    for (const field of ["MessageSid", "From", "Body", "NumMedia"]) expect(form["application/x-www-form-urlencoded"].schema.properties).toHaveProperty(field);
    expect(d.paths["/webhooks/twilio"].post.parameters.map((p: Json) => p.name)).toContain("X-Twilio-Signature");

    const stored = await post("/webhooks/twilio", inbound, signed("/webhooks/twilio", inbound));
    expect(stored.status).toBe(200);
    await expectDocumented(d, "/webhooks/twilio", "post", stored);
    const polled = (await (await server.fetch(`/api/messages/poll?phone=${encodeURIComponent(PHONE)}`)).json()) as { messages: { message: string }[] };
    expect(polled.messages.map((m) => m.message)).toContain("hello");
    await expectDocumented(d, "/webhooks/twilio", "post", await post("/webhooks/twilio", inbound, "forged")); // 401
    await expectDocumented(d, "/webhooks/twilio", "post", await fetch(`${server.url}/webhooks/twilio`)); // 405

    const sid = twilioSid("SM");
    const report = twilioStatusParams({ accountSid: fake.accountSid, messageSid: sid, status: "delivered", from: FROM, to: PHONE });
    const statusPath = "/webhooks/twilio/status?id=unknown";
    await expectDocumented(d, "/webhooks/twilio/status", "post", await post(statusPath, report, signed(statusPath, report))); // 204
    await expectDocumented(d, "/webhooks/twilio/status", "post", await post(statusPath, report, null)); // 401
  });

  test("a network failure on send is a documented 502", async () => {
    fake.reply({ kind: "error", httpStatus: 500, code: 20500, message: "Internal Server Error" });
    try {
      const res = await server.fetch("/api/send", json({ phone: PHONE, message: "x" }));
      expect(res.status).toBe(502);
      await expectDocumented(doc(), "/api/send", "post", res);
    } finally {
      fake.reply({ kind: "created" });
    }
  });

  test("the loopback webhook is not documented on this network", () => {
    expect(doc().paths["/webhooks/loopback"]).toBeUndefined();
  });
});

describe("NETWORK=bluebubbles", () => {
  const SECRET = newApiKey();
  let fake: FakeBlueBubbles;
  let server: Server;
  beforeAll(async () => {
    fake = startFakeBlueBubbles();
    server = await startServer({
      env: { ...LIMITED, NETWORK: "bluebubbles", BLUEBUBBLES_URL: fake.url, BLUEBUBBLES_PASSWORD: fake.password, WEBHOOK_SECRET: SECRET },
    });
  });
  afterAll(() => {
    server?.kill();
    fake?.stop();
  });
  const doc = lintSuite("bluebubbles", () => server);

  test("the webhook answers what the document says", async () => {
    const d = doc();
    const asResponse = (r: { status: number; headers: Headers; text: string }) => new Response(r.text, { status: r.status, headers: r.headers });
    const event = { type: "typing-indicator", data: {} };
    await expectDocumented(d, "/webhooks/bluebubbles", "post", asResponse(await postBlueBubblesWebhook(server.url, SECRET, event)));
    await expectDocumented(d, "/webhooks/bluebubbles", "post", asResponse(await postBlueBubblesWebhook(server.url, "wrong", event)));
    const malformed = await fetch(`${server.url}/webhooks/bluebubbles?secret=${SECRET}`, { method: "POST", body: "{" });
    expect(malformed.status).toBe(400);
    await expectDocumented(d, "/webhooks/bluebubbles", "post", malformed);
  });
});
