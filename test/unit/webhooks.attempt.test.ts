import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import pkg from "../../package.json";
import type { WebhookEndpointRow } from "../../src/db/port";
import { attemptDelivery } from "../../src/webhooks/attempt";
import { deliveryHeaders } from "../../src/webhooks/signing";
import { newSecret, startReceiver, until, verifies, type Receiver } from "../support/webhook-receiver";

// Local servers and real I/O: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const receivers: Receiver[] = [];
afterEach(() => {
  for (const r of receivers.splice(0)) r.stop();
});

function receiver(...args: Parameters<typeof startReceiver>) {
  const r = startReceiver(...args);
  receivers.push(r);
  return r;
}

function endpoint(url: string, secret: string, previous?: { secret: string; until: number }): WebhookEndpointRow {
  return {
    id: "we_test",
    url,
    events: null,
    description: null,
    enabled: true,
    disabledReason: null,
    secret,
    previousSecret: previous?.secret ?? null,
    previousSecretUntil: previous?.until ?? null,
    failingSince: null,
    createdAt: 0,
    updatedAt: 0,
  };
}

const BODY = JSON.stringify({ type: "message.received", timestamp: "2026-11-21T09:30:00.000001Z", data: { id: "msg_1" } });
const allowPrivate = { allowPrivate: true };

describe("signing", () => {
  test("the headers of an attempt: id, the attempt's Unix seconds, one v1 signature, JSON, Textwire's user-agent", () => {
    const secret = newSecret();
    const at = new Date(1_790_000_000_900);
    const headers = deliveryHeaders(endpoint("https://example.com/", secret), "evt_1", BODY, at);
    expect(headers).toMatchObject({
      "webhook-id": "evt_1",
      "webhook-timestamp": "1790000000",
      "content-type": "application/json",
      "user-agent": `Textwire-Webhooks/${pkg.version}`,
    });
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  test("while the previous secret is valid both sign, space-separated; once expired only the current one", () => {
    const [current, previous] = [newSecret(), newSecret()];
    const at = new Date();
    const during = deliveryHeaders(endpoint("https://example.com/", current, { secret: previous, until: at.getTime() + 1 }), "evt_1", BODY, at);
    expect(during["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(verifies(current, { headers: during, body: BODY })).toBe(true);
    expect(verifies(previous, { headers: during, body: BODY })).toBe(true);
    const after = deliveryHeaders(endpoint("https://example.com/", current, { secret: previous, until: at.getTime() }), "evt_1", BODY, at);
    expect(after["webhook-signature"]!.split(" ")).toHaveLength(1);
    expect(verifies(current, { headers: after, body: BODY })).toBe(true);
    expect(verifies(previous, { headers: after, body: BODY })).toBe(false);
  });

  test("a changed body or id does not verify", () => {
    const secret = newSecret();
    const headers = deliveryHeaders(endpoint("https://example.com/", secret), "evt_1", BODY, new Date());
    expect(verifies(secret, { headers, body: BODY.replace("msg_1", "msg_2") })).toBe(false);
    expect(verifies(secret, { headers: { ...headers, "webhook-id": "evt_2" }, body: BODY })).toBe(false);
  });
});

describe("one attempt", () => {
  test("2xx: ok, and the receiver verified the signed POST with the library", async () => {
    const secret = newSecret();
    const r = receiver(secret);
    expect(await attemptDelivery(endpoint(`${r.url}/hook`, secret), "evt_1", BODY, allowPrivate)).toEqual({ ok: true, status: 204, error: null });
    expect(r.received).toHaveLength(1);
    expect(r.received[0]).toMatchObject({ path: "/hook", body: BODY, verified: true });
    expect(r.received[0]!.headers).toMatchObject({ "webhook-id": "evt_1", "content-type": "application/json", "user-agent": `Textwire-Webhooks/${pkg.version}` });
  });

  test("after a rotation, a receiver holding either secret verifies the same request", async () => {
    const [current, previous] = [newSecret(), newSecret()];
    const withOld = receiver(previous);
    const withNew = receiver(current);
    const until = Date.now() + 24 * 60 * 60_000;
    expect((await attemptDelivery(endpoint(withOld.url, current, { secret: previous, until }), "evt_1", BODY, allowPrivate)).ok).toBe(true);
    expect((await attemptDelivery(endpoint(withNew.url, current, { secret: previous, until }), "evt_1", BODY, allowPrivate)).ok).toBe(true);
    expect(withOld.received.map((r) => r.verified)).toEqual([true]);
    expect(withNew.received.map((r) => r.verified)).toEqual([true]);
  });

  test("500 and 410 are failures with their status", async () => {
    const r = receiver(undefined, () => new Response("oops", { status: 500 }));
    expect(await attemptDelivery(endpoint(r.url, newSecret()), "evt_1", BODY, allowPrivate)).toEqual({ ok: false, status: 500, error: "HTTP 500" });
    r.respond = () => new Response(null, { status: 410 });
    expect(await attemptDelivery(endpoint(r.url, newSecret()), "evt_1", BODY, allowPrivate)).toEqual({ ok: false, status: 410, error: "HTTP 410" });
  });

  test("a redirect is a failure and is not followed: its target gets nothing", async () => {
    const target = receiver();
    const r = receiver(undefined, () => new Response(null, { status: 301, headers: { location: `${target.url}/elsewhere` } }));
    expect(await attemptDelivery(endpoint(r.url, newSecret()), "evt_1", BODY, allowPrivate)).toEqual({
      ok: false,
      status: 301,
      error: "redirect not followed (301)",
    });
    expect(r.received).toHaveLength(1);
    expect(target.received).toHaveLength(0);
  });

  test("a receiver that never answers: a timeout, with no status", async () => {
    const r = receiver(undefined, () => new Promise<Response>(() => {}));
    expect(await attemptDelivery(endpoint(r.url, newSecret()), "evt_1", BODY, { allowPrivate: true, timeoutMs: 1_000 })).toEqual({
      ok: false,
      status: null,
      error: "timeout after 1 s",
    });
    expect(r.received).toHaveLength(1);
  });

  test("a 200 whose body never ends is a timeout too: the limit covers the body", async () => {
    const r = receiver(undefined, () => new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode("{")) })));
    expect(await attemptDelivery(endpoint(r.url, newSecret()), "evt_1", BODY, { allowPrivate: true, timeoutMs: 1_000 })).toEqual({
      ok: false,
      status: 200,
      error: "timeout after 1 s",
    });
  });

  test("an endless body: the attempt ends as a success and the rest of the body is refused", async () => {
    let cancelled = false;
    const r = receiver(undefined, () =>
      new Response(
        new ReadableStream({
          pull: (c) => c.enqueue(new Uint8Array(65_536)),
          cancel: () => void (cancelled = true),
        }),
      ),
    );
    // Reading it all would never end.
    expect(await attemptDelivery(endpoint(r.url, newSecret()), "evt_1", BODY, allowPrivate)).toEqual({ ok: true, status: 200, error: null });
    await until(() => cancelled, "the receiver's body stream cancelled");
  });

  test("a refused connection is a failure naming it", async () => {
    const r = receiver();
    const url = r.url;
    r.stop();
    expect(await attemptDelivery(endpoint(url, newSecret()), "evt_1", BODY, allowPrivate)).toEqual({ ok: false, status: null, error: "connection error: ECONNREFUSED" });
  });

  test("without ALLOW_PRIVATE_URLS, a loopback or http endpoint is blocked and no request is made", async () => {
    const r = receiver();
    const port = new URL(r.url).port;
    const blocked = { allowPrivate: false };
    expect(await attemptDelivery(endpoint(`https://127.0.0.1:${port}/`, newSecret()), "evt_1", BODY, blocked)).toEqual({
      ok: false,
      status: null,
      error: "blocked: 127.0.0.1 is a loopback address",
    });
    expect(await attemptDelivery(endpoint(`https://localhost:${port}/`, newSecret()), "evt_1", BODY, blocked)).toEqual({
      ok: false,
      status: null,
      error: "blocked: localhost is a loopback address",
    });
    expect(await attemptDelivery(endpoint(r.url, newSecret()), "evt_1", BODY, blocked)).toEqual({ ok: false, status: null, error: "blocked: must be an https URL" });
    expect(r.received).toHaveLength(0);
  });
});

describe("DNS rebinding: an attempt connects to the address that was checked", () => {
  /** A DNS that answers `first` once, then `later` (the rebinding attacker's name server); counts its questions. */
  function rebinding(first: string, later: string) {
    const asked: string[] = [];
    const lookup = async (host: string) => {
      asked.push(host);
      return [{ address: asked.length === 1 ? first : later }];
    };
    return { lookup, asked };
  }

  test("the name is resolved once; the POST goes to that address, with the name as Host", async () => {
    const r = receiver(newSecret());
    const port = new URL(r.url).port;
    const dns = rebinding("127.0.0.1", "10.0.0.1");
    // A name no real DNS answers: only the checked address can be reached.
    const url = `http://hooks.rebind.invalid:${port}/hook`;
    const result = await attemptDelivery(endpoint(url, r.secret!), "evt_pin", BODY, { ...allowPrivate, lookup: dns.lookup });
    expect(result).toEqual({ ok: true, status: 204, error: null });
    expect(dns.asked).toEqual(["hooks.rebind.invalid"]);
    expect(r.received).toHaveLength(1);
    expect(r.received[0]!.headers.host).toBe(`hooks.rebind.invalid:${port}`);
    expect(r.received[0]!.verified).toBe(true);
  });

  test("a name that resolves inward is refused before any request, and the reason is reported", async () => {
    const r = receiver(newSecret());
    const port = new URL(r.url).port;
    const refused: string[] = [];
    const dns = rebinding("127.0.0.1", "127.0.0.1");
    const result = await attemptDelivery(endpoint(`https://hooks.rebind.invalid:${port}/hook`, r.secret!), "evt_in", BODY, {
      allowPrivate: false,
      lookup: dns.lookup,
      onRefused: (reason) => refused.push(reason),
    });
    expect(result).toEqual({ ok: false, status: null, error: "blocked: hooks.rebind.invalid resolves to 127.0.0.1 is a loopback address" });
    expect(refused).toEqual(["hooks.rebind.invalid resolves to 127.0.0.1 is a loopback address"]);
    expect(r.received).toEqual([]);
  });
});
