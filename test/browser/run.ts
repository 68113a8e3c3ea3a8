// `bun run test:browser [filter…]`: the browser tests (test/browser/*.test.ts) under Node.
// `bun run screenshots`: docs/console/*.png (test/browser/screenshots.ts).
//
// playwright-core runs under Node, and Node 20 does not run TypeScript: Bun.build bundles
// each file (our code only; packages stay imports) into test/browser/.build, inside the
// repository so that Node finds node_modules, and Node runs the output from the
// repository's root. The folder is git-ignored, and bun test skips it (hidden).
import { Glob } from "bun";
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..", "..");
const SOURCE = join(ROOT, "test", "browser");
const OUT = join(SOURCE, ".build");
/** One test's limit, and under Node 20 one file's too: a file that runs longer than this is stuck. */
const TEST_TIMEOUT_MS = 300_000;
const POSTGRES_ONLY = "postgres.test.ts";

async function bundle(entrypoints: string[]): Promise<string[]> {
  rmSync(OUT, { recursive: true, force: true });
  const result = await Bun.build({ entrypoints, outdir: OUT, target: "node", packages: "external", format: "esm", root: SOURCE });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    throw new Error("bundling the browser tests failed");
  }
  return result.outputs.map((o) => o.path);
}

async function node(args: string[]): Promise<number> {
  const proc = Bun.spawn(["node", ...args], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
  return proc.exited;
}

async function runTests(filters: string[]): Promise<number> {
  let files = [...new Glob("*.test.ts").scanSync(SOURCE)].sort();
  if (!process.env.TEST_DATABASE_URL) {
    files = files.filter((f) => f !== POSTGRES_ONLY);
    console.log("Browser tests on PostgreSQL not run: set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres to run them");
  }
  if (filters.length > 0) files = files.filter((f) => filters.some((filter) => f.includes(filter)));
  if (files.length === 0) throw new Error(`no browser test file matches ${filters.join(" ")}`);
  const outputs = await bundle(files.map((f) => join(SOURCE, f)));
  return node(["--test", "--test-reporter=spec", "--test-concurrency=1", `--test-timeout=${TEST_TIMEOUT_MS}`, ...outputs.sort()]);
}

async function takeScreenshots(): Promise<number> {
  const [script] = await bundle([join(SOURCE, "screenshots.ts")]);
  return node([script!]);
}

const [command, ...rest] = process.argv.slice(2);
try {
  process.exitCode = command === "screenshots" ? await takeScreenshots() : await runTests([command, ...rest].filter((a): a is string => a !== undefined));
} catch (err) {
  console.error((err as Error).message);
  process.exitCode = 1;
}
