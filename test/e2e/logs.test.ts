// Structured logs (docs/operations.md): one JSON object a line, a request id shared
// with the X-Request-Id header, and never a key or a message text.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { call, newPhone } from "./api";
import { lines, startServer, waitFor, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(() => server?.kill());

test("every request gets an X-Request-Id that its log line carries; logs hold no key and no text", async () => {
  const secretText = `private note ${crypto.randomUUID()}`;
  const ok = await call(server, "POST", "/api/send", { body: { phone: newPhone(), message: secretText } });
  const bad = await call(server, "GET", "/api/messages/poll", { headers: { authorization: "Bearer tw_wrong_key_aaaaaaaaaaaaaaaaaaaaaaaa" } });
  expect(ok.status).toBe(200);
  expect(bad.status).toBe(401);
  const ids = [ok, bad].map((r) => r.headers.get("x-request-id") ?? "");
  for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/);
  expect(ids[0]).not.toBe(ids[1]);

  const logged = () => lines(server.stdout).flatMap((l) => (l.startsWith("{") ? [JSON.parse(l) as Record<string, unknown>] : []));
  await waitFor("both request lines", 5_000, () => ids.every((id) => logged().some((l) => l.requestId === id)));
  const [sendLine, badLine] = ids.map((id) => logged().find((l) => l.requestId === id)!);
  expect(sendLine).toMatchObject({ level: "info", msg: "request", method: "POST", path: "/api/send", status: 200 });
  expect(badLine).toMatchObject({ msg: "request", method: "GET", path: "/api/messages/poll", status: 401 });
  // Every line is one JSON object with a time and a level.
  for (const line of lines(server.stdout)) {
    const parsed = JSON.parse(line) as { time?: string; level?: string };
    expect(typeof parsed.time).toBe("string");
    expect(["debug", "info", "warn", "error"]).toContain(parsed.level!);
  }
  expect(server.stdout).not.toContain(server.apiKey);
  expect(server.stdout).not.toContain("tw_wrong_key");
  expect(server.stdout).not.toContain(secretText);
});
