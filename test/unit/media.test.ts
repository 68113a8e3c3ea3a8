// The media pieces on their own: the store (a folder, and S3 against a local S3-compatible
// server, s3rver, started here on 127.0.0.1), fetching a URL (safety rules, redirects, the
// size limit while streaming, content types sniffed), Range parsing and signed URLs.
// s3rver 3.7.1 answers a PUT before the object's file is written (a GET right after could
// read it empty); patches/s3rver@3.7.1.patch makes it answer once the file is closed, as S3
// reads after writes.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import { parseRange } from "../../src/api/media";
import { fetchMedia, MediaFetchError } from "../../src/media/fetch";
import { signedMediaUrl, signedUrlProblem } from "../../src/media/signed-url";
import { sniffContentType } from "../../src/media/sniff";
import { folderStore, newMediaKey, openMediaStore, s3SettingsFromEnv, type MediaStore } from "../../src/media/store";

// Local servers and real I/O: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const bytes = (...values: number[]) => new Uint8Array(values);
const noise = (n: number) => new Uint8Array(Array.from({ length: n }, (_, i) => (i * 7 + 3) % 256));

const tempDirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "textwire-media-"));
  tempDirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/** The same contract for every store. */
function storeContract(name: string, open: () => MediaStore) {
  describe(name, () => {
    test("put, read whole and in ranges, delete", async () => {
      const store = open();
      const key = newMediaKey();
      const data = noise(1000);
      await store.put(key, data, "image/png");
      expect(await store.read(key)).toEqual(data);
      // (Not 0-0: s3rver answers `bytes=0-0` with the whole object, which S3 does not.)
      expect(await store.readRange(key, 0, 9)).toEqual(data.slice(0, 10));
      expect(await store.readRange(key, 100, 199)).toEqual(data.slice(100, 200));
      expect(await store.readRange(key, 990, 999)).toEqual(data.slice(990));
      await store.delete(key);
      await expect(store.read(key)).rejects.toThrow();
      // Deleting twice is no error.
      await store.delete(key);
    });

    test("keys are random and a key that is not one of ours is refused", async () => {
      const store = open();
      const keys = new Set(Array.from({ length: 100 }, newMediaKey));
      expect(keys.size).toBe(100);
      for (const key of keys) expect(key).toMatch(/^[0-9a-f]{2}\/[0-9a-f]{32}$/);
      await expect(store.put("../escape", bytes(1), "text/plain")).rejects.toThrow("not a media key");
      await expect(store.read("/etc/passwd")).rejects.toThrow("not a media key");
    });
  });
}

storeContract("folder store", () => folderStore(tempDir()));

let s3: S3rver;
let s3Port = 0;
const S3_ENV = { S3_ACCESS_KEY_ID: "S3RVER", S3_SECRET_ACCESS_KEY: "S3RVER", S3_REGION: "us-east-1" };
beforeAll(async () => {
  s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: tempDir(), configureBuckets: [{ name: "textwire-media", configs: [] }] });
  const { port } = (await s3.run()) as unknown as { port: number };
  s3Port = port;
});
afterAll(async () => {
  await s3?.close();
});

storeContract("S3 store (s3rver)", () => openMediaStore("s3://textwire-media/some/prefix", { ...S3_ENV, S3_ENDPOINT: `http://127.0.0.1:${s3Port}` }));

test("the S3 store keeps objects under the prefix", async () => {
  const store = openMediaStore("s3://textwire-media/kept", { ...S3_ENV, S3_ENDPOINT: `http://127.0.0.1:${s3Port}` });
  const key = newMediaKey();
  await store.put(key, noise(10), "image/jpeg");
  const res = await fetch(`http://127.0.0.1:${s3Port}/textwire-media/kept/${key}`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("image/jpeg");
  expect(new Uint8Array(await res.arrayBuffer())).toEqual(noise(10));
  expect(store.describe).toBe("s3://textwire-media/kept");
});

test("S3 settings: S3_* first, else AWS_*", () => {
  expect(s3SettingsFromEnv({ AWS_ACCESS_KEY_ID: "a", AWS_SECRET_ACCESS_KEY: "b", AWS_REGION: "eu-west-1", S3_REGION: "auto", AWS_ENDPOINT: "https://x" })).toEqual({
    accessKeyId: "a",
    secretAccessKey: "b",
    region: "auto",
    endpoint: "https://x",
  });
  expect(s3SettingsFromEnv({})).toEqual({});
});

describe("sniffing", () => {
  const cases: [string, Uint8Array, string | null][] = [
    ["jpeg", bytes(0xff, 0xd8, 0xff, 0xe0, 0, 0x10), "image/jpeg"],
    ["png", bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0), "image/png"],
    ["gif", new TextEncoder().encode("GIF89a\x01\x00"), "image/gif"],
    ["webp", new TextEncoder().encode("RIFF\x10\x00\x00\x00WEBPVP8 "), "image/webp"],
    ["heic", new TextEncoder().encode("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00"), "image/heic"],
    ["mp4", new TextEncoder().encode("\x00\x00\x00\x20ftypisom\x00\x00\x02\x00"), "video/mp4"],
    ["mov", new TextEncoder().encode("\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00"), "video/quicktime"],
    ["pdf", new TextEncoder().encode("%PDF-1.7\n"), "application/pdf"],
    ["vcard", new TextEncoder().encode("BEGIN:VCARD\r\nVERSION:3.0"), "text/vcard"],
    ["mp3", new TextEncoder().encode("ID3\x04\x00"), "audio/mpeg"],
    ["text", new TextEncoder().encode("hello there"), null],
    ["empty", bytes(), null],
  ];
  for (const [name, data, type] of cases) test(name, () => expect(sniffContentType(data)).toBe(type));
});

describe("parseRange", () => {
  test.each([
    [null, 100, "whole"],
    ["bytes=0-9", 100, { start: 0, end: 9 }],
    ["bytes=90-", 100, { start: 90, end: 99 }],
    ["bytes=90-500", 100, { start: 90, end: 99 }],
    ["bytes=-10", 100, { start: 90, end: 99 }],
    ["bytes=-500", 100, { start: 0, end: 99 }],
    ["bytes=100-", 100, "unsatisfiable"],
    ["bytes=100-200", 100, "unsatisfiable"],
    ["bytes=-0", 100, "unsatisfiable"],
    // Ignored (the whole file): bad syntax, another unit, several ranges, last before first.
    ["bytes=9-0", 100, "whole"],
    ["bytes=a-b", 100, "whole"],
    ["items=0-9", 100, "whole"],
    ["bytes=0-1,5-6", 100, "whole"],
    ["bytes=-", 100, "whole"],
  ] as const)("%p of %p bytes", (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });
});

describe("signed URLs", () => {
  const secret = "s".repeat(32);
  const id = `med_${"a".repeat(32)}`;
  const now = Date.UTC(2026, 0, 1);
  const query = (url: string) => new URL(url).searchParams;

  test("valid until it expires, then expired; any change is forged", () => {
    const url = signedMediaUrl("https://tw.example.com/", secret, id, now);
    expect(url).toStartWith(`https://tw.example.com/media/${id}?expires=`);
    expect(signedUrlProblem(secret, id, query(url), now + 60_000)).toBeNull();
    expect(signedUrlProblem(secret, id, query(url), now + 25 * 3600_000)).toBe("expired");
    expect(signedUrlProblem("t".repeat(32), id, query(url), now)).toBe("forged");
    expect(signedUrlProblem(secret, `med_${"b".repeat(32)}`, query(url), now)).toBe("forged");
    const later = query(url);
    later.set("expires", String(Number(later.get("expires")) + 3600));
    expect(signedUrlProblem(secret, id, later, now)).toBe("forged");
    expect(signedUrlProblem(secret, id, new URLSearchParams(), now)).toBe("forged");
  });

  test("a link signed to expire more than 7 days ahead is refused, even with a good signature", () => {
    const day = 24 * 3600_000;
    // signedMediaUrl signs for a day after the `now` it is given: signed "6 days on", it expires 7 days from now.
    const atLimit = signedMediaUrl("https://tw.example.com/", secret, id, now + 6 * day);
    expect(signedUrlProblem(secret, id, query(atLimit), now)).toBeNull();
    const beyond = signedMediaUrl("https://tw.example.com/", secret, id, now + 6 * day + 1000);
    expect(signedUrlProblem(secret, id, query(beyond), now)).toBe("too_far");
    const years = signedMediaUrl("https://tw.example.com/", secret, id, now + 3650 * day);
    expect(signedUrlProblem(secret, id, query(years), now)).toBe("too_far");
  });
});

describe("fetchMedia", () => {
  let server: ReturnType<typeof Bun.serve>;
  let base: string;
  const seen: { path: string; authorization: string | null }[] = [];
  const PNG = bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3);
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req) {
        const url = new URL(req.url);
        seen.push({ path: url.pathname, authorization: req.headers.get("authorization") });
        switch (url.pathname) {
          case "/typed":
            return new Response(PNG, { headers: { "Content-Type": "Image/PNG; charset=binary" } });
          case "/generic":
            return new Response(PNG, { headers: { "Content-Type": "application/octet-stream" } });
          case "/unknown":
            return new Response(noise(20), { headers: { "Content-Type": "application/octet-stream" } });
          case "/declared-large":
            return new Response(noise(64), { headers: { "Content-Length": "64" } });
          case "/streamed-large":
            return new Response(
              new ReadableStream({
                pull(c) {
                  c.enqueue(noise(16));
                },
              }),
            );
          case "/empty":
            return new Response("");
          case "/hop":
            // Redirects for ever.
            return Response.redirect(`/hop?n=${Number(url.searchParams.get("n") ?? 0) + 1}`, 302);
          case "/to-typed":
            return Response.redirect(`${base}/typed`, 307);
          case "/to-elsewhere":
            // Another origin (localhost instead of 127.0.0.1): the auth header stays behind.
            return Response.redirect(`http://localhost:${server.port}/typed`, 302);
          default:
            return new Response("no", { status: 404 });
        }
      },
    });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server?.stop(true);
  });
  const open = { allowPrivate: true };

  test("the response's type, lower case without parameters; sniffed when generic", async () => {
    expect((await fetchMedia(`${base}/typed`, open)).contentType).toBe("image/png");
    const generic = await fetchMedia(`${base}/generic`, open);
    expect(generic.contentType).toBe("image/png");
    expect(generic.bytes).toEqual(PNG);
    expect((await fetchMedia(`${base}/unknown`, open)).contentType).toBe("application/octet-stream");
  });

  test("the size limit: refused by Content-Length, and cut off while streaming", async () => {
    const declared = await fetchMedia(`${base}/declared-large`, { ...open, maxBytes: 32 }).catch((e) => e);
    expect(declared).toBeInstanceOf(MediaFetchError);
    expect((declared as MediaFetchError).kind).toBe("too-large");
    const streamed = await fetchMedia(`${base}/streamed-large`, { ...open, maxBytes: 1000 }).catch((e) => e);
    expect((streamed as MediaFetchError).kind).toBe("too-large");
  });

  test("not 200, empty, unreachable: failed", async () => {
    for (const path of ["/missing", "/empty"]) {
      const err = (await fetchMedia(`${base}${path}`, open).catch((e) => e)) as MediaFetchError;
      expect(err.kind).toBe("failed");
    }
    const closed = (await fetchMedia("http://127.0.0.1:1/x", open).catch((e) => e)) as MediaFetchError;
    expect(closed.kind).toBe("failed");
  });

  test("the webhook URL rules: https and public addresses only, unless private URLs are allowed", async () => {
    const cases: [string, string][] = [
      [`${base}/typed`, "must be an https URL"],
      ["https://127.0.0.1/x", "127.0.0.1 is a loopback address"],
      ["https://10.1.2.3/x", "10.1.2.3 is a private address"],
      ["https://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"],
      ["https://localhost/x", "localhost is a loopback address"],
      ["https://user:pw@example.com/x", "must not contain credentials"],
    ];
    for (const [url, message] of cases) {
      const err = (await fetchMedia(url, { allowPrivate: false }).catch((e) => e)) as MediaFetchError;
      expect(err.kind).toBe("refused");
      expect(err.message).toBe(message);
    }
  });

  test("redirects: followed up to 3, each hop checked; the auth header only to the first origin", async () => {
    seen.length = 0;
    const got = await fetchMedia(`${base}/to-typed`, { ...open, headers: { Authorization: "Basic abc" } });
    expect(got.bytes).toEqual(PNG);
    expect(seen.map((s) => s.authorization)).toEqual(["Basic abc", "Basic abc"]);

    seen.length = 0;
    await fetchMedia(`${base}/to-elsewhere`, { ...open, headers: { Authorization: "Basic abc" } });
    expect(seen.map((s) => s.authorization)).toEqual(["Basic abc", null]);

    const tooMany = (await fetchMedia(`${base}/hop`, open).catch((e) => e)) as MediaFetchError;
    expect(tooMany.kind).toBe("failed");
    expect(tooMany.message).toBe("was redirected more than 3 times");
  });

  test("DNS rebinding: the name is resolved once and the file is fetched from that address, the name as Host", async () => {
    const asked: string[] = [];
    // The attacker's name server: a first answer, then another for anyone who asks again.
    const lookup = async (host: string) => {
      asked.push(host);
      return [{ address: asked.length === 1 ? "127.0.0.1" : "10.0.0.1" }];
    };
    const fetched = await fetchMedia(`http://media.rebind.invalid:${server.port}/typed`, { ...open, lookup });
    expect(fetched.contentType).toBe("image/png");
    expect(asked).toEqual(["media.rebind.invalid"]);
    const refused = await fetchMedia(`https://media.rebind.invalid:${server.port}/typed`, { allowPrivate: false, lookup: async () => [{ address: "169.254.169.254" }] }).catch((e) => e);
    expect(refused).toBeInstanceOf(MediaFetchError);
    expect((refused as MediaFetchError).message).toBe("media.rebind.invalid resolves to 169.254.169.254 is a link-local address");
  });
});
