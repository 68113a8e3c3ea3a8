// History and poll answers are not re-validated on every response (src/api/trpc.ts,
// documentedOnly): here real answers are checked against the schemas the OpenAPI document shows.
import { expect, test } from "bun:test";
import { createHttpHandler } from "../../src/api/http";
import { createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import { eventsOutput } from "../../src/events/schemas";
import { historyOutput, pollOutput, sendOutput } from "../../src/messages/schemas";
import { deliveriesOutput } from "../../src/webhooks/schemas";
import { dialects, storages } from "./helpers";

const KEY = "tw_unit_aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const fresh = storages(dialects[0]!);

test("real answers match the documented schemas exactly", async () => {
  const app = await createApp(loadConfig({ DATABASE_URL: ":memory:", API_KEYS: KEY }), await fresh(), createLogger("error"));
  const http = createHttpHandler(app);
  const call = async (path: string, body?: unknown) => {
    const init: RequestInit = { headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" } };
    if (body) Object.assign(init, { method: "POST", body: JSON.stringify(body) });
    const res = await http.fetch(new Request(`http://127.0.0.1${path}`, init), "127.0.0.1");
    expect(res.status).toBe(200);
    return res.json();
  };
  const sent = await call("/api/send", { phone: "+14155550123", message: "out" });
  await call("/webhooks/loopback", { phone: "+14155550123", message: "in", id: "n1" });
  // A failed message carries `error`: the schema must allow it.
  await app.storage.messages.insert({ id: "f1", phone: "+14155550123", body: "lost", direction: "outbound", status: "failed", network: "loopback", networkId: null, error: "refused" });

  for (const [schema, answer] of [
    [sendOutput, sent],
    [historyOutput, await call("/api/messages/%2B14155550123")],
    [pollOutput, await call("/api/messages/poll")],
  ] as const) {
    // strict: no field the document does not show.
    const strict = schema.safeParse(answer);
    expect(strict.success).toBe(true);
    expect(strict.data as unknown).toEqual(answer);
  }
  const page = historyOutput.parse(await call("/api/messages/%2B14155550123"));
  expect(page.messages.map((m) => m.status)).toEqual(["failed", "received", "delivered"]);
  expect(page.messages[0]?.error).toBe("refused");
});

test("events and deliveries answers match their documented schemas exactly", async () => {
  const app = await createApp(loadConfig({ DATABASE_URL: ":memory:", API_KEYS: KEY, ALLOW_PRIVATE_URLS: "true" }), await fresh(), createLogger("error"));
  const http = createHttpHandler(app);
  const call = async (path: string, body?: unknown, status = 200) => {
    const init: RequestInit = { headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" } };
    if (body) Object.assign(init, { method: "POST", body: JSON.stringify(body) });
    const res = await http.fetch(new Request(`http://127.0.0.1${path}`, init), "127.0.0.1");
    expect(res.status).toBe(status);
    return res.json();
  };
  const { endpoint } = await call("/api/webhook-endpoints", { url: "http://127.0.0.1:9/hook" }, 201);
  await call("/webhooks/loopback", { phone: "+14155550123", message: "in" });
  await call("/api/send", { phone: "+14155550123", message: "out" });
  const events = await call("/api/events");
  // The endpoint's own creation is an admin event, delivered to it like any other.
  expect(events.events.map((e: { type: string }) => e.type)).toEqual(["webhook_endpoint.created", "message.received", "message.status_updated"]);
  const deliveries = await call(`/api/webhook-endpoints/${endpoint.id}/deliveries`);
  expect(deliveries.count).toBe(3);
  for (const [schema, answer] of [
    [eventsOutput, events],
    [deliveriesOutput, deliveries],
  ] as const) {
    const strict = schema.safeParse(answer);
    expect(strict.success).toBe(true);
    expect(strict.data as unknown).toEqual(answer);
  }
});
