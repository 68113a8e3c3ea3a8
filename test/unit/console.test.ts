// The console's HTTP helpers (src/api/console.ts) without a server: which origins are the
// server's own and when a request counts as HTTPS (the cookie's Secure flag), and the
// in-memory build of the app, once, a failure logged once and never thrown.
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { consoleBuilder, createOrigins } from "../../src/api/console";
import { loadConfig } from "../../src/config";
import { createLogger } from "../../src/log";

// Local servers and real I/O: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const configWith = (env: Record<string, string>) => loadConfig({ API_KEYS: "tw_unit_aaaaaaaaaaaaaaaaaaaaaaaa", ...env });
const request = (url: string, headers: Record<string, string> = {}) => new Request(url, { headers });

describe("createOrigins", () => {
  test("without a proxy or PUBLIC_URL: the request URL's origin only; https only when the URL is", () => {
    const origins = createOrigins(configWith({}));
    const req = request("http://127.0.0.1:3000/console/session", { "x-forwarded-proto": "https" });
    const url = new URL(req.url);
    expect(origins.isOwn("http://127.0.0.1:3000", req, url, "127.0.0.1")).toBe(true);
    for (const other of ["https://127.0.0.1:3000", "http://127.0.0.1:3001", "http://localhost:3000", "null", "", "https://evil.example"]) {
      expect(origins.isOwn(other, req, url, "127.0.0.1")).toBe(false);
    }
    expect(origins.overHttps(req, url, "127.0.0.1")).toBe(false);
    const tls = request("https://console.example.com/console/session");
    expect(origins.overHttps(tls, new URL(tls.url), "198.51.100.1")).toBe(true);
  });

  test("PUBLIC_URL: its origin is the server's own too, and an https PUBLIC_URL makes every cookie Secure", () => {
    const origins = createOrigins(configWith({ PUBLIC_URL: "https://textwire.example.com/base" }));
    const req = request("http://10.0.0.5:3000/console/session");
    const url = new URL(req.url);
    expect(origins.isOwn("https://textwire.example.com", req, url, "10.0.0.9")).toBe(true);
    expect(origins.isOwn("http://textwire.example.com", req, url, "10.0.0.9")).toBe(false);
    expect(origins.overHttps(req, url, "10.0.0.9")).toBe(true);
    expect(createOrigins(configWith({ PUBLIC_URL: "http://textwire.example.com" })).overHttps(req, url, "10.0.0.9")).toBe(false);
  });

  test("X-Forwarded-Proto: https counts only from a TRUSTED_PROXIES peer", () => {
    const origins = createOrigins(configWith({ TRUSTED_PROXIES: "10.0.0.0/8" }));
    const req = request("http://textwire.example.com/console/session", { "x-forwarded-proto": "HTTPS, http" });
    const url = new URL(req.url);
    expect(origins.overHttps(req, url, "10.1.2.3")).toBe(true);
    expect(origins.isOwn("https://textwire.example.com", req, url, "10.1.2.3")).toBe(true);
    expect(origins.overHttps(req, url, "198.51.100.1")).toBe(false);
    expect(origins.isOwn("https://textwire.example.com", req, url, "198.51.100.1")).toBe(false);
    const plain = request("http://textwire.example.com/console/session", { "x-forwarded-proto": "http" });
    expect(origins.overHttps(plain, new URL(plain.url), "10.1.2.3")).toBe(false);
  });
});

describe("consoleBuilder", () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
  const app = (files: Record<string, string>) => {
    const dir = mkdtempSync(join(tmpdir(), "tw-console-"));
    dirs.push(dir);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return join(dir, "index.html");
  };
  const recordingLog = () => {
    const lines: Record<string, unknown>[] = [];
    return { lines, log: createLogger("info", {}, (line) => lines.push(JSON.parse(line))) };
  };

  test("builds in memory once: index.html pointing at hashed assets under /console/assets/", async () => {
    const entry = app({
      "index.html": '<!doctype html><html><head><link rel="stylesheet" href="./app.css"></head><body><script type="module" src="./main.ts"></script></body></html>',
      "main.ts": 'document.body.append(process.env.NODE_ENV === "production" ? "built" : "dev");',
      "app.css": "body { color: black; }",
    });
    const { lines, log } = recordingLog();
    const built = consoleBuilder(entry, log);
    const first = built();
    expect(built()).toBe(first);
    const result = (await first)!;
    const html = new TextDecoder().decode(result.index.bytes);
    const names = [...result.assets.keys()];
    expect(names.some((n) => n.endsWith(".js")) && names.some((n) => n.endsWith(".css"))).toBe(true);
    for (const name of names) expect(html).toContain(`/console/assets/${name}`);
    const js = new TextDecoder().decode(result.assets.get(names.find((n) => n.endsWith(".js"))!)!.bytes);
    expect(js).toContain('"built"');
    expect(js).not.toContain("process.env");
    expect(lines.filter((l) => l.msg === "built the console")).toHaveLength(1);
  });

  test("a failed build resolves to null and is logged once, however often it is asked for", async () => {
    const entry = app({ "index.html": '<!doctype html><script type="module" src="./main.ts"></script>', "main.ts": "import { nothing } from './missing';\nnothing();" });
    const { lines, log } = recordingLog();
    const built = consoleBuilder(entry, log);
    expect(await built()).toBeNull();
    expect(await built()).toBeNull();
    const errors = lines.filter((l) => l.level === "error");
    expect(errors).toHaveLength(1);
    expect(errors[0]!.msg).toBe("the console failed to build; /console answers 500");
  });
});
