// Installing for a server (README "Installing on a server"): `bun install --production` in a
// copy of the repository's files installs no development tool (browser driver, OpenAPI
// linters, the S3 stand-in, drizzle-kit), and `bun run start` from that copy serves the API,
// the console, the reference and the shipped workflows.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { call, history, newPhone, send } from "./api";
import { ROOT, fileServers, type Server } from "./harness";

// The install reads bun's cache (a second or two); a cold cache downloads once.
setDefaultTimeout(120_000);

const copy = mkdtempSync(join(tmpdir(), "textwire-production-"));
const files = fileServers();
let installed: { code: number; stderr: string };
let server: Server;

beforeAll(async () => {
  // The repository's files as a clone has them: tracked files only, no node_modules.
  const listed = Bun.spawnSync(["git", "ls-files", "-z"], { cwd: ROOT });
  if (listed.exitCode !== 0) throw new Error(`git ls-files failed: ${listed.stderr.toString()}`);
  for (const file of listed.stdout.toString().split("\0").filter(Boolean)) {
    if (!existsSync(join(ROOT, file))) continue;
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    cpSync(join(ROOT, file), join(copy, file));
  }
  const install = Bun.spawn(["bun", "install", "--production", "--frozen-lockfile"], { cwd: copy, stdout: "pipe", stderr: "pipe" });
  installed = { code: await install.exited, stderr: await new Response(install.stderr).text() };
  if (installed.code === 0) server = await files.boot({ cwd: copy, apiKey: null, env: { WORKFLOWS_DIR: undefined } });
}, 120_000);

afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe("bun install --production && bun run start", () => {
  test("installs, with none of the development tools", () => {
    expect([installed.code, installed.stderr.includes("error:") ? installed.stderr : ""]).toEqual([0, ""]);
    const devOnly = ["playwright-core", "@axe-core/playwright", "@redocly/cli", "@stoplight/spectral-cli", "s3rver", "drizzle-kit", "dpdm", "twilio", "@readme/openapi-parser"];
    expect(devOnly.filter((name) => existsSync(join(copy, "node_modules", name)))).toEqual([]);
    expect(existsSync(join(copy, "node_modules", "@trpc/server"))).toBe(true);
  });

  test("starts, prints its first key, sends and reads history", async () => {
    expect(server.apiKey).toMatch(/^tw_/);
    const phone = newPhone();
    const sent = await send(server, phone, "from a production install");
    const { messages, total } = await history(server, phone);
    expect([total, messages[0]?.id, messages[0]?.status]).toEqual([1, sent.message_id, "delivered"]);
  });

  test("serves /health, the reference at /docs, the console and its script, and loads the shipped workflows", async () => {
    expect((await call(server, "GET", "/health", { key: null })).status).toBe(200);
    const docs = await server.fetch("/docs", {}, null);
    expect([docs.status, (await docs.text()).includes("<html")]).toEqual([200, true]);
    const page = await (await server.fetch("/console", {}, null)).text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page)?.[1];
    expect(script).toBeDefined();
    const asset = await server.fetch(script!, {}, null);
    expect([asset.status, (await asset.text()).length > 1000]).toEqual([200, true]);
    expect(server.stdout).toContain("autoresponder");
  });
});
