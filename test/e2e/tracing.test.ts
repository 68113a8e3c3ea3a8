// Traces over OTLP/HTTP (docs/operations.md, Tracing), against a local receiver the test starts:
// a send's request, send, network call and outbound HTTP spans arrive in one trace, which
// continues the client's `traceparent` and goes on to the network stand-in in its own
// `traceparent`; spans still batched at SIGTERM are flushed before exit. Without
// OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry module is loaded at all.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { call, newPhone, type SendResult } from "./api";
import { ROOT, startServer, testDatabase, type EnvOverlay, type Server } from "./harness";
import { startFakeTwilio, twilioEnv, type FakeTwilio } from "../support/fake-twilio";
import { startOtlpReceiver, type OtlpReceiver } from "../support/otlp-receiver";
import { startReceiver, type Receiver } from "../support/webhook-receiver";

setDefaultTimeout(60_000);

const servers: Server[] = [];
const fakes: FakeTwilio[] = [];
const receivers: OtlpReceiver[] = [];
const hooks: Receiver[] = [];
afterAll(async () => {
  for (const h of hooks) h.stop();
  for (const s of servers) s.kill();
  for (const f of fakes) await f.stop();
  for (const r of receivers) await r.stop();
});

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";

/** A server whose every module load is written to a folder of its own at exit (test/support/loaded-modules.ts). */
async function serveRecordingModules(env: EnvOverlay): Promise<{ server: Server; loaded: () => string[] }> {
  const db = await testDatabase();
  const dir = join(db.dir, "loaded-modules");
  mkdirSync(dir);
  const server = await startServer({ db, env: { ...env, BUN_OPTIONS: `--preload=${join(ROOT, "test/support/loaded-modules.ts")}`, LOADED_MODULES_DIR: dir } });
  servers.push(server);
  // `bun run` and the server are two processes: each writes its own list.
  const loaded = () => readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n"));
  return { server, loaded };
}

describe("with OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  test("a send's spans reach the receiver in the caller's trace, traceparent goes to the network, and spans batched at SIGTERM are flushed", async () => {
    const receiver = startOtlpReceiver();
    receivers.push(receiver);
    const fake = startFakeTwilio();
    fakes.push(fake);
    // The default batch delay (5 s) is left: only the flush at shutdown gets the spans there before the test ends.
    const { server, loaded } = await serveRecordingModules({ ...twilioEnv(fake), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    const sent = await call<SendResult>(server, "POST", "/api/send", {
      body: { phone: newPhone(), message: "traced" },
      headers: { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` },
    });
    expect(sent.status).toBe(200);
    expect(await server.stop("SIGTERM")).toBe(0);

    const request = await receiver.waitFor((s) => s.kind === 2 && s.name === "POST /api/send");
    expect(request).toMatchObject({ traceId: TRACE_ID, parentSpanId: CLIENT_SPAN, service: "textwire" });
    expect(request.attributes).toMatchObject({ "http.route": "/api/send", "http.response.status_code": 200 });
    const send = await receiver.waitFor((s) => s.name === "send");
    const network = await receiver.waitFor((s) => s.name === "network.send");
    const outbound = await receiver.waitFor((s) => s.kind === 3 && s.name === "HTTP POST");
    expect([send, network, outbound].map((s) => s.traceId)).toEqual([TRACE_ID, TRACE_ID, TRACE_ID]);
    expect(send.parentSpanId).toBe(request.spanId);
    expect(network.parentSpanId).toBe(send.spanId);
    expect(outbound.parentSpanId).toBe(network.spanId);
    expect(network.attributes).toMatchObject({ "textwire.network": "twilio" });
    // What Twilio got: the trace, with the outbound call's own span as parent.
    expect(fake.sends[0]!.headers.traceparent).toBe(`00-${TRACE_ID}-${outbound.spanId}-01`);
    // No phone number or raw path names a span.
    for (const s of receiver.spans) expect(s.name).not.toMatch(/\+\d{6,}/);
    expect(receiver.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true);
    expect(loaded().some((f) => f.includes("/node_modules/@opentelemetry/sdk-trace/"))).toBe(true);
  });

  test("a webhook delivery attempt is a span whose POST carries its traceparent; OTEL_BSP_SCHEDULE_DELAY exports while running", async () => {
    const receiver = startOtlpReceiver();
    receivers.push(receiver);
    const hook = startReceiver();
    hooks.push(hook);
    const server = await startServer({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "100", ALLOW_PRIVATE_URLS: "true" } });
    servers.push(server);
    expect((await call(server, "POST", "/api/webhook-endpoints", { body: { url: `${hook.url}/hook`, events: ["message.received"] } })).status).toBe(201);
    expect((await call(server, "POST", "/webhooks/loopback", { body: { phone: newPhone(), message: "hi" } })).status).toBe(200);

    const attempt = await receiver.waitFor((s) => s.name === "webhook.attempt");
    const post = await receiver.waitFor((s) => s.kind === 3 && s.parentSpanId === attempt.spanId);
    expect(post).toMatchObject({ name: "HTTP POST", traceId: attempt.traceId });
    expect(attempt.attributes).toMatchObject({ "textwire.webhook.ok": true, "http.response.status_code": 204 });
    expect(hook.received[0]!.headers.traceparent).toBe(`00-${attempt.traceId}-${post.spanId}-01`);
    // Exported while the server runs: the batch delay was honoured.
    expect(server.proc.exitCode).toBeNull();
  });
});

describe("without OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  test("no OpenTelemetry module is loaded, through a send and a shutdown", async () => {
    const { server, loaded } = await serveRecordingModules({});
    const sent = await call<SendResult>(server, "POST", "/api/send", { body: { phone: newPhone(), message: "untraced" }, headers: { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` } });
    expect(sent.status).toBe(200);
    expect(await server.stop("SIGTERM")).toBe(0);
    const files = loaded();
    expect(files.some((f) => f.endsWith("src/main.ts"))).toBe(true);
    expect(files.filter((f) => f.includes("@opentelemetry"))).toEqual([]);
  });
});
