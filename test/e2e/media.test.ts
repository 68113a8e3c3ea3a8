// Media both ways, over real HTTP with the real server (docs/api.md "Media", docs/networks.md):
// - POST /api/send with `media`: each file fetched (from a local file server; ALLOW_PRIVATE_URLS
//   lets it be on 127.0.0.1) and kept before the message is stored; the record lists it;
//   GET /api/media/:id serves the same bytes, with Range (206, 416), HEAD and the key (401);
// - refusals name the field and store nothing: no text and no media, 11 files, a file over
//   25 MiB, a URL that does not answer 200;
// - inbound media on the loopback webhook, a failed download leaving the message stored;
// - Twilio: MediaUrl is a signed Textwire URL that the stand-in fetches; forged or expired
//   signatures are 403; inbound NumMedia/MediaUrlN fetched with the account's Basic auth;
// - BlueBubbles: each file uploaded to message/attachment with the same bytes; inbound
//   attachments downloaded from the server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHmac, randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { call, expectError, history, newPhone, poll, type MessageRecord } from "./api";
import { ROOT, startServer, testDatabase, waitFor, waitUntil, type Server } from "./harness";
import { bbMessage, blueBubblesEnv, postBlueBubblesWebhook, startFakeBlueBubbles, type FakeBlueBubbles } from "../support/fake-bluebubbles";
import {
  TEST_FROM,
  TEST_PUBLIC_URL,
  postTwilioWebhook,
  signTwilioRequest,
  startFakeTwilio,
  twilioInboundParams,
  twilioEnv,
  twilioSid,
  type FakeTwilio,
} from "../support/fake-twilio";

setDefaultTimeout(60_000);

type Media = { id: string; content_type: string; size: number; url: string };
type WithMedia = MessageRecord & { media: Media[] };

const MiB = 1024 * 1024;
/** A JPEG's first bytes, then noise: what a sniffer and a byte comparison need. */
const jpeg = (size: number) => {
  const bytes = new Uint8Array(randomBytes(size));
  bytes.set([0xff, 0xd8, 0xff, 0xe0]);
  return bytes;
};
const png = () => {
  const bytes = new Uint8Array(randomBytes(300));
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return bytes;
};
const PHOTO = jpeg(5000);
const PICTURE = png();

/** The files the tests send, on 127.0.0.1. */
let files: ReturnType<typeof Bun.serve>;
let filesUrl: string;
const allowPrivate = { ALLOW_PRIVATE_URLS: "true" };

beforeAll(() => {
  files = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/photo.jpg") return new Response(PHOTO, { headers: { "Content-Type": "image/jpeg" } });
      // No useful type: sniffed from the bytes.
      if (path === "/picture") return new Response(PICTURE, { headers: { "Content-Type": "application/octet-stream" } });
      if (path === "/moved") return Response.redirect("/photo.jpg", 302);
      if (path === "/huge") {
        // Streamed with no Content-Length: the limit must hold while reading.
        let sent = 0;
        const chunk = new Uint8Array(MiB);
        return new Response(
          new ReadableStream({
            pull(controller) {
              if (sent > 26 * MiB) return controller.close();
              sent += chunk.length;
              controller.enqueue(chunk);
            },
          }),
          { headers: { "Content-Type": "video/mp4" } },
        );
      }
      return new Response("not here", { status: 404 });
    },
  });
  filesUrl = `http://127.0.0.1:${files.port}`;
});
afterAll(async () => {
  await files?.stop(true);
});

async function sendMedia(server: Server, body: Record<string, unknown>) {
  return call<{ success: boolean; message_id: string; status: string }>(server, "POST", "/api/send", { body });
}

async function recordOf(server: Server, phone: string, id: string): Promise<WithMedia> {
  const { messages } = await history(server, phone);
  const found = messages.find((m) => m.id === id);
  if (!found) throw new Error(`message ${id} not in the history of ${phone}`);
  return found as WithMedia;
}

async function bytesOf(server: Server, url: string, headers: Record<string, string> = {}) {
  const res = await server.fetch(url, { headers });
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
}

describe("loopback", () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer({ env: allowPrivate });
  });
  afterAll(() => server?.kill());

  test("a send with media: the record lists the file and GET /api/media/:id serves its bytes", async () => {
    const phone = newPhone();
    const sent = await sendMedia(server, { phone, message: "look", media: [{ url: `${filesUrl}/photo.jpg` }, { url: `${filesUrl}/picture` }] });
    expect(sent.status).toBe(200);
    expect(sent.body.status).toBe("delivered");
    const record = await recordOf(server, phone, sent.body.message_id);
    expect(record.message).toBe("look");
    expect(record.media.map((m) => [m.content_type, m.size])).toEqual([
      ["image/jpeg", PHOTO.length],
      ["image/png", PICTURE.length],
    ]);
    for (const m of record.media) {
      expect(m.id).toMatch(/^med_[0-9a-f]{32}$/);
      expect(m.url).toBe(`/api/media/${m.id}`);
    }
    const { res, bytes } = await bytesOf(server, record.media[0]!.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(res.headers.get("content-length")).toBe(String(PHOTO.length));
    expect(res.headers.get("accept-ranges")).toBe("bytes");
    expect(res.headers.get("etag")).toBe(`"${record.media[0]!.id}"`);
    expect(bytes).toEqual(PHOTO);
    expect((await bytesOf(server, record.media[1]!.url)).bytes).toEqual(PICTURE);
  });

  test("Range: 206 with Content-Range, a suffix range, 416 outside the file, HEAD, 304, the key, 404", async () => {
    const phone = newPhone();
    const sent = await sendMedia(server, { phone, media: [{ url: `${filesUrl}/moved` }] });
    expect(sent.status).toBe(200);
    const [media] = (await recordOf(server, phone, sent.body.message_id)).media;
    const url = media!.url;

    const part = await bytesOf(server, url, { Range: "bytes=10-109" });
    expect(part.res.status).toBe(206);
    expect(part.res.headers.get("content-range")).toBe(`bytes 10-109/${PHOTO.length}`);
    expect(part.res.headers.get("content-length")).toBe("100");
    expect(part.bytes).toEqual(PHOTO.slice(10, 110));

    const tail = await bytesOf(server, url, { Range: "bytes=-16" });
    expect(tail.res.status).toBe(206);
    expect(tail.bytes).toEqual(PHOTO.slice(PHOTO.length - 16));

    const open = await bytesOf(server, url, { Range: `bytes=${PHOTO.length - 5}-` });
    expect(open.res.headers.get("content-range")).toBe(`bytes ${PHOTO.length - 5}-${PHOTO.length - 1}/${PHOTO.length}`);
    expect(open.bytes).toEqual(PHOTO.slice(PHOTO.length - 5));

    const outside = await call(server, "GET", url, { headers: { Range: `bytes=${PHOTO.length}-` } });
    expectError(outside, 416, "RANGE_NOT_SATISFIABLE");
    expect(outside.headers.get("content-range")).toBe(`bytes */${PHOTO.length}`);

    const head = await server.fetch(url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(PHOTO.length));
    expect((await head.arrayBuffer()).byteLength).toBe(0);

    const cached = await server.fetch(url, { headers: { "If-None-Match": `"${media!.id}"` } });
    expect(cached.status).toBe(304);

    expectError(await call(server, "GET", url, { key: null }), 401, "UNAUTHORIZED");
    expectError(await call(server, "GET", url, { key: "tw_wrong_key_000000000000000000" }), 401, "UNAUTHORIZED");
    expectError(await call(server, "GET", `/api/media/med_${"0".repeat(32)}`), 404, "NOT_FOUND");
    expectError(await call(server, "GET", "/api/media/anything"), 404, "NOT_FOUND");
    // A malformed percent-escape is a wrong id too, never a 500.
    expectError(await call(server, "GET", "/api/media/%E0%A4%A"), 404, "NOT_FOUND");
    expectError(await call(server, "GET", "/media/%E0%A4%A?expires=1&sig=x"), 403, "FORBIDDEN");
    expectError(await call(server, "POST", url, { body: {} }), 405, "METHOD_NOT_SUPPORTED");
  });

  test("media alone: the record's message is empty", async () => {
    const phone = newPhone();
    const sent = await sendMedia(server, { phone, media: [{ url: `${filesUrl}/photo.jpg` }] });
    expect(sent.status).toBe(200);
    const record = await recordOf(server, phone, sent.body.message_id);
    expect(record.message).toBe("");
    expect(record.media).toHaveLength(1);
  });

  test("refusals name the field and store nothing", async () => {
    const phone = newPhone();
    const neither = await sendMedia(server, { phone });
    expect(expectError(neither, 400, "BAD_REQUEST").error.message).toContain("message: ");

    const eleven = await sendMedia(server, { phone, media: Array.from({ length: 11 }, () => ({ url: `${filesUrl}/photo.jpg` })) });
    expect(expectError(eleven, 400, "BAD_REQUEST").error.message).toContain("media: must hold at most 10 files");

    const notUrl = await sendMedia(server, { phone, message: "x", media: [{ url: "ftp://example.com/a.jpg" }] });
    expect(expectError(notUrl, 400, "BAD_REQUEST").error.message).toContain("media.0.url: ");

    const huge = await sendMedia(server, { phone, message: "big", media: [{ url: `${filesUrl}/photo.jpg` }, { url: `${filesUrl}/huge` }] });
    expect(expectError(huge, 413, "PAYLOAD_TOO_LARGE").error.message).toBe("media.1.url: the file is larger than 25 MiB");

    const missing = await sendMedia(server, { phone, message: "gone", media: [{ url: `${filesUrl}/nothing.jpg` }] });
    expect(expectError(missing, 400, "BAD_REQUEST").error.message).toBe("media.0.url: the file could not be fetched (HTTP 404)");

    expect((await history(server, phone)).total).toBe(0);
  });

  test("inbound media on the loopback webhook; a file that cannot be downloaded leaves the message stored", async () => {
    const phone = newPhone();
    const reply = await call<{ message_id: string }>(server, "POST", "/webhooks/loopback", {
      body: { phone, media: [{ url: `${filesUrl}/photo.jpg` }, { url: `${filesUrl}/nothing.png` }] },
    });
    expect(reply.status).toBe(200);
    const { messages } = await poll(server, { phone });
    const record = messages.find((m) => m.id === reply.body.message_id) as WithMedia;
    expect(record.message).toBe("");
    expect(record.media.map((m) => m.content_type)).toEqual(["image/jpeg"]);
    expect((await bytesOf(server, record.media[0]!.url)).bytes).toEqual(PHOTO);
    await waitFor("the log line", 5_000, () => (server.stdout + server.stderr).includes("inbound media not downloaded"), () => server.stdout + server.stderr);
  });

  test("the message.received event (GET /api/events) carries the message's media as its record does", async () => {
    const phone = newPhone();
    const reply = await call<{ message_id: string }>(server, "POST", "/webhooks/loopback", { body: { phone, message: "see", media: [{ url: `${filesUrl}/photo.jpg` }] } });
    expect(reply.status).toBe(200);
    const events = await call<{ events: { type: string; data: WithMedia }[] }>(server, "GET", "/api/events?type=message.received&limit=100");
    const event = events.body.events.find((e) => e.data.id === reply.body.message_id)!;
    expect(event.data.media).toEqual((await recordOf(server, phone, reply.body.message_id)).media);
    expect(event.data.media.map((m) => [m.content_type, m.size])).toEqual([["image/jpeg", PHOTO.length]]);
  });
});

test("workflows: msg.media in ctx.poll(), and ctx.send({ phone, media })", async () => {
  const db = await testDatabase();
  const wfDir = join(db.dir, "workflows");
  mkdirSync(wfDir, { recursive: true });
  // For each inbound message, sends its first file's type back as text and a picture with no text.
  writeFileSync(
    join(wfDir, "media-bot.ts"),
    `import { defineWorkflow } from ${JSON.stringify(resolve(ROOT, "src", "workflow.ts"))};
export default defineWorkflow({
  name: "media-bot",
  schedule: "* * * * * *",
  async run(ctx) {
    for (const msg of await ctx.poll()) {
      await ctx.send({ phone: msg.phone, message: "got " + msg.media.map((m) => m.content_type).join(","), idempotencyKey: "text-" + msg.id });
      const sent = await ctx.send({ phone: msg.phone, media: [{ url: ${JSON.stringify(`${filesUrl}/picture`)} }] });
      await ctx.state.set("sent-" + msg.id, sent.media.length);
    }
  },
});
`,
  );
  const server = await startServer({ db, env: { ...allowPrivate, WORKFLOWS_DIR: wfDir } });
  try {
    // A new workflow answers what arrives once it is scheduled (its cursor starts at the newest message).
    await waitFor("the workflow to be scheduled", 10_000, () => server.stdout.includes("workflow media-bot scheduled"), () => server.stdout);
    const phone = newPhone();
    const reply = await call(server, "POST", "/webhooks/loopback", { body: { phone, message: "see", media: [{ url: `${filesUrl}/photo.jpg` }] } });
    expect(reply.status).toBe(200);
    const outbound = await waitUntil("the workflow's two sends", async () => {
      const { messages } = await history(server, phone);
      const out = (messages as WithMedia[]).filter((m) => m.direction === "outbound");
      return out.length === 2 ? out : undefined;
    });
    // Newest first: the picture, then the text.
    expect(outbound[1]!.message).toBe("got image/jpeg");
    expect(outbound[0]!.message).toBe("");
    expect(outbound[0]!.media.map((m) => m.content_type)).toEqual(["image/png"]);
    expect((await bytesOf(server, outbound[0]!.media[0]!.url)).bytes).toEqual(PICTURE);
  } finally {
    server.kill();
    await db.cleanup();
  }
});

describe("twilio", () => {
  let fake: FakeTwilio;
  let server: Server;
  const secret = randomBytes(24).toString("base64url");
  beforeAll(async () => {
    fake = startFakeTwilio();
    server = await startServer({ env: twilioEnv(fake, { ...allowPrivate, MEDIA_URL_SECRET: secret }) });
    fake.textwireUrl = server.url;
  });
  afterAll(async () => {
    server?.kill();
    await fake?.stop();
  });

  test("MediaUrl is a signed Textwire URL, one per file, and Twilio fetches the same bytes", async () => {
    const phone = newPhone();
    const sent = await sendMedia(server, { phone, message: "pics", media: [{ url: `${filesUrl}/photo.jpg` }, { url: `${filesUrl}/picture` }] });
    expect(sent.status).toBe(200);
    const request = fake.sends.at(-1)!;
    const form = new URLSearchParams(request.rawBody);
    expect(form.get("Body")).toBe("pics");
    const urls = form.getAll("MediaUrl");
    const record = await recordOf(server, phone, sent.body.message_id);
    expect(urls).toHaveLength(2);
    urls.forEach((u, i) => expect(u).toStartWith(`${TEST_PUBLIC_URL}/media/${record.media[i]!.id}?expires=`));
    const fetched = await fake.waitForMediaFetches(2);
    expect(fetched.map((f) => [f.status, f.contentType])).toEqual([
      [200, "image/jpeg"],
      [200, "image/png"],
    ]);
    expect(fetched[0]!.bytes).toEqual(PHOTO);
    expect(fetched[1]!.bytes).toEqual(PICTURE);
  });

  test("a scheduled send with media goes out with its files when its time comes", async () => {
    const phone = newPhone();
    const before = fake.sends.length;
    const sent = await sendMedia(server, { phone, message: "later pics", media: [{ url: `${filesUrl}/photo.jpg` }], send_at: new Date(Date.now() + 1500).toISOString() });
    expect([sent.status, sent.body.status]).toEqual([200, "scheduled"]);
    expect((await recordOf(server, phone, sent.body.message_id)).media.map((m) => m.content_type)).toEqual(["image/jpeg"]);
    const [request] = (await fake.waitForSends(before + 1, 10_000)).slice(before);
    const form = new URLSearchParams(request!.rawBody);
    expect(form.get("Body")).toBe("later pics");
    expect(form.getAll("MediaUrl")).toHaveLength(1);
    const url = form.get("MediaUrl")!;
    const fetched = await waitFor("Twilio fetching the scheduled message's file", 10_000, () => fake.mediaFetches.find((f) => f.url === url));
    expect([fetched.status, fetched.bytes]).toEqual([200, PHOTO]);
  });

  test("media alone: no Body, only MediaUrl", async () => {
    const phone = newPhone();
    const sent = await sendMedia(server, { phone, media: [{ url: `${filesUrl}/photo.jpg` }] });
    expect(sent.status).toBe(200);
    const form = new URLSearchParams(fake.sends.at(-1)!.rawBody);
    expect(form.has("Body")).toBe(false);
    expect(form.getAll("MediaUrl")).toHaveLength(1);
  });

  test("a forged, missing or expired signature is 403", async () => {
    const phone = newPhone();
    const sent = await sendMedia(server, { phone, media: [{ url: `${filesUrl}/photo.jpg` }] });
    const signed = new URL(new URLSearchParams(fake.sends.at(-1)!.rawBody).get("MediaUrl")!);
    const path = signed.pathname;
    const id = path.split("/").pop()!;
    expect((await server.fetch(path + signed.search, {}, null)).status).toBe(200);
    const forged = new URLSearchParams(signed.search);
    forged.set("sig", "0".repeat(64));
    expectError(await call(server, "GET", `${path}?${forged}`, { key: null }), 403, "FORBIDDEN");
    expectError(await call(server, "GET", path, { key: null }), 403, "FORBIDDEN");
    const later = new URLSearchParams(signed.search);
    later.set("expires", String(Number(later.get("expires")) + 1));
    expectError(await call(server, "GET", `${path}?${later}`, { key: null }), 403, "FORBIDDEN");
    const past = Math.floor(Date.now() / 1000) - 60;
    const sig = createHmac("sha256", secret).update(`${id}.${past}`).digest("hex");
    const expired = expectError(await call(server, "GET", `${path}?expires=${past}&sig=${sig}`, { key: null }), 403, "FORBIDDEN");
    expect(expired.error.message).toContain("expired");
    expect(sent.status).toBe(200);
  });

  test("inbound MMS: NumMedia/MediaUrlN fetched with the account's Basic auth, text empty when none", async () => {
    const phone = newPhone();
    const messageSid = twilioSid("MM");
    const url = fake.addInboundMedia(messageSid, PICTURE, "image/png");
    const params = twilioInboundParams({ accountSid: fake.accountSid, from: phone, to: TEST_FROM, body: "", messageSid, media: [{ url, contentType: "image/png" }] });
    const reply = await postTwilioWebhook(server.url, "/webhooks/twilio", params, signTwilioRequest(fake.authToken, `${TEST_PUBLIC_URL}/webhooks/twilio`, params));
    expect(reply.status).toBe(200);
    const record = (await history(server, phone)).messages[0] as WithMedia;
    expect(record.message).toBe("");
    expect(record.media.map((m) => m.content_type)).toEqual(["image/png"]);
    expect((await bytesOf(server, record.media[0]!.url)).bytes).toEqual(PICTURE);
    const mediaRequest = fake.requests.find((r) => r.path === new URL(url).pathname)!;
    expect(mediaRequest.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString("base64")}`);
  });
});

describe("bluebubbles", () => {
  let fake: FakeBlueBubbles;
  let server: Server;
  const secret = randomBytes(24).toString("base64url");
  beforeAll(async () => {
    fake = startFakeBlueBubbles();
    server = await startServer({
      env: blueBubblesEnv(fake, secret, allowPrivate),
    });
    fake.webhooks.push(`${server.url}/webhooks/bluebubbles?secret=${secret}`);
  });
  afterAll(async () => {
    server?.kill();
    await fake?.stop();
  });

  test("the text, then each file uploaded to message/attachment with the same bytes", async () => {
    const phone = newPhone();
    fake.addChat(phone);
    const sent = await sendMedia(server, { phone, message: "here", media: [{ url: `${filesUrl}/photo.jpg` }, { url: `${filesUrl}/picture` }] });
    expect(sent.status).toBe(200);
    const record = await recordOf(server, phone, sent.body.message_id);
    const mine = fake.uploads.filter((u) => u.chatGuid === `iMessage;-;${phone}`);
    expect(mine.map((u) => [u.name, u.type])).toEqual([
      [`${record.media[0]!.id}.jpg`, "image/jpeg"],
      [`${record.media[1]!.id}.png`, "image/png"],
    ]);
    expect(mine[0]!.bytes).toEqual(PHOTO);
    expect(mine[1]!.bytes).toEqual(PICTURE);
    const requests = fake.sends.filter((r) => r.body?.chatGuid === `iMessage;-;${phone}`);
    expect(requests.map((r) => r.path)).toEqual(["/api/v1/message/text", "/api/v1/message/attachment", "/api/v1/message/attachment"]);
    expect(new Set(requests.map((r) => r.body.tempGuid))).toEqual(new Set([`textwire-${record.id}`]));
    expect(requests[1]!.query.password).toBe(fake.password);
    await waitUntil("the message marked sent", async () => (await recordOf(server, phone, record.id)).status === "sent");
  });

  test("media alone: only the attachment", async () => {
    const phone = newPhone();
    fake.addChat(phone);
    const sent = await sendMedia(server, { phone, media: [{ url: `${filesUrl}/photo.jpg` }] });
    expect(sent.status).toBe(200);
    const requests = fake.sends.filter((r) => r.body?.chatGuid === `iMessage;-;${phone}`);
    expect(requests.map((r) => r.path)).toEqual(["/api/v1/message/attachment"]);
  });

  test("an inbound message of attachments alone is stored, its files downloaded from the server", async () => {
    const phone = newPhone();
    const attachment = fake.addAttachmentFile(PHOTO, "image/jpeg");
    const message = bbMessage({ address: phone, text: "\uFFFC", attachments: [attachment] });
    const reply = await postBlueBubblesWebhook(server.url, secret, { type: "new-message", data: message });
    expect(reply.status).toBe(200);
    const record = (await history(server, phone)).messages[0] as WithMedia;
    expect(record.message).toBe("");
    expect(record.media.map((m) => [m.content_type, m.size])).toEqual([["image/jpeg", PHOTO.length]]);
    expect((await bytesOf(server, record.media[0]!.url)).bytes).toEqual(PHOTO);
    const download = fake.requests.find((r) => r.path === `/api/v1/attachment/${attachment.guid}/download`)!;
    expect(download.query.password).toBe(fake.password);
  });
});
