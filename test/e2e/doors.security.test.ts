// Doors found open by trying to break in (docs/security.md), each closed on the real server:
// /trpc refuses an unauthenticated request before reading its body, and every kind of failed
// secret (a network webhook's signature, the metrics token) counts toward the per-address
// throttle (20 a minute, then 429), as API keys and console sign-ins do.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { connect } from "node:net";
import { startFakeTwilio, twilioEnv, type FakeTwilio } from "../support/fake-twilio";
import { call } from "./api";
import { startServer, type Server } from "./harness";

setDefaultTimeout(60_000);

/** Sends only the head of a request (and `partial` bytes of a body it says is much longer); the status line of the answer, or null if none came within `ms`. */
function headOnly(url: string, head: string, partial: string, ms = 5_000): Promise<string | null> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let got = "";
    const done = (value: string | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done(null), ms);
    socket.on("connect", () => socket.write(`${head}\r\n\r\n${partial}`));
    socket.on("data", (chunk) => {
      got += chunk.toString();
      if (got.includes("\r\n")) done(got.split("\r\n")[0]!);
    });
    socket.on("error", () => done(null));
  });
}

describe("/trpc refuses an unauthenticated request before reading its body, as REST does", () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server?.kill());

  test.each(["/api/send", "/trpc/messages.send", "/trpc/messages.send,messages.send?batch=1"])("%s: 401 with most of the body never sent", async (path) => {
    const host = new URL(server.url).host;
    const head = [`POST ${path} HTTP/1.1`, `Host: ${host}`, "Content-Type: application/json", "Content-Length: 900000", "Connection: close"].join("\r\n");
    expect(await headOnly(server.url, head, '{"phone":')).toBe("HTTP/1.1 401 Unauthorized");
  });

  test("the tRPC answer is still tRPC's: each call of the batch says UNAUTHORIZED", async () => {
    const reply = await call<any[]>(server, "POST", "/trpc/messages.send,keys.create?batch=1", { key: null, body: { 0: { phone: "+14155550123", message: "x" }, 1: { name: "x" } } });
    expect(reply.status).toBe(401);
    expect(reply.body.map((r) => r.error.data.code)).toEqual(["UNAUTHORIZED", "UNAUTHORIZED"]);
  });
});

describe("every failed secret counts toward the per-address throttle", () => {
  let fake: FakeTwilio;
  let server: Server;
  beforeAll(async () => {
    fake = startFakeTwilio();
    server = await startServer({ env: { ...twilioEnv(fake), METRICS_TOKEN: "metrics-token-aaaaaaaaaaaaaaaa" } });
  });
  afterAll(() => {
    server?.kill();
    fake?.stop();
  });

  test("a network webhook's wrong signature: 401, then 429 with Retry-After once the address is past 20", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) {
      const reply = await call(server, "POST", "/webhooks/twilio", {
        key: null,
        raw: "From=%2B14155550123&Body=hi&MessageSid=SM1",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": "forged" },
      });
      statuses.push(reply.status);
      if (reply.status === 429) expect(Number(reply.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    expect(statuses).toEqual([...Array<number>(20).fill(401), 429, 429]);
  });

  test("the metrics token counts too: the same address is already throttled, and a wrong token is 429", async () => {
    const reply = await call(server, "GET", "/metrics", { key: "wrong-metrics-token" });
    expect(reply.status).toBe(429);
    // The right token is never refused by the throttle.
    expect((await call(server, "GET", "/metrics", { key: "metrics-token-aaaaaaaaaaaaaaaa" })).status).toBe(200);
  });
});

describe("the metrics token alone", () => {
  test("20 wrong tokens are 404 (the route is not shown), the next is 429", async () => {
    const server = await startServer({ env: { METRICS_TOKEN: "metrics-token-bbbbbbbbbbbbbbbb" } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 21; i++) statuses.push((await call(server, "GET", "/metrics", { key: `wrong-${i}` })).status);
      expect(statuses).toEqual([...Array<number>(20).fill(404), 429]);
    } finally {
      server.kill();
    }
  });
});
