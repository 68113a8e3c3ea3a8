import { parseArgs } from "node:util";
import { createApp } from "./app";
import { createKey, listKeys, revokeKey } from "./auth/keys";
import { ConfigError, loadConfig } from "./config";
import { DatabaseError, openStorage } from "./db";
import { AppError, parseInput } from "./errors";
import { createLogger } from "./log";
import { inboundInput, sendInput } from "./messages/schemas";
import { recordInbound, sendMessage } from "./messages/service";
import { Cron } from "croner";
import { loadWorkflows } from "./workflows/loader";
import { runWorkflow } from "./workflows/runner";
import { unmetRequirement } from "./workflows/scheduler";
import { runnerDeps } from "./workflows/worker";

const USAGE = `usage: bun run textwire <command>

  keys create --name NAME   create an API key (printed once, never stored)
  keys list                 list keys by name and prefix
  keys revoke NAME          revoke a key; it stops working at once
  send PHONE MESSAGE        send a message, e.g. send +14155550123 "Hello"
  inbound PHONE MESSAGE     deliver an inbound message on the loopback network
  workflows list            workflows in WORKFLOWS_DIR: schedule, next run, last result
  workflows run NAME [--dry-run]
                            run one workflow now and print its result; with --dry-run
                            nothing is sent and the cursor stays

Configuration comes from the same environment as the server (DATABASE_URL, NETWORK, ...).`;

class UsageError extends Error {}

async function openApp() {
  const config = loadConfig();
  const storage = await openStorage(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
  return createApp(config, storage, createLogger(config.LOG_LEVEL === "debug" ? "debug" : "warn", {}, (l) => process.stderr.write(l)));
}

const print = (value: unknown) => process.stdout.write(`${typeof value === "string" ? value : JSON.stringify(value, null, 2)}\n`);

function expectArgs(args: string[], names: string[]): string[] {
  if (args.length !== names.length) throw new UsageError(`expected ${names.join(" ")}, got ${args.length} argument(s)`);
  return args;
}

async function keys(args: string[]) {
  const [sub, ...rest] = args;
  const { storage } = await openApp();
  const keys = storage.apiKeys;
  try {
    switch (sub) {
      case "create": {
        const { values, positionals } = parseArgs({ args: rest, options: { name: { type: "string" } }, strict: true, allowPositionals: true });
        if (!values.name || positionals.length) throw new UsageError("keys create takes --name NAME");
        const { key } = await createKey(keys, values.name);
        print(key);
        process.stderr.write(`Created key "${values.name}". Store it now: it is not shown again.\n`);
        return;
      }
      case "list": {
        const rows = await listKeys(keys);
        if (rows.length === 0) return print("no keys stored (keys from API_KEYS are not listed)");
        print(["NAME".padEnd(24) + "PREFIX".padEnd(14) + "CREATED".padEnd(26) + "STATUS"]
          .concat(rows.map((k) => k.name.padEnd(24) + `${k.prefix}…`.padEnd(14) + k.createdAt.padEnd(26) + (k.revokedAt ? `revoked ${k.revokedAt}` : "active")))
          .join("\n"));
        return;
      }
      case "revoke": {
        const [name] = expectArgs(rest, ["NAME"]);
        await revokeKey(keys, name!);
        print(`revoked ${name}`);
        return;
      }
      default:
        throw new UsageError(`unknown keys command ${sub ? `"${sub}"` : "(none)"}; use create, list or revoke`);
    }
  } finally {
    await storage.close();
  }
}

async function workflows(args: string[]) {
  const [sub, ...rest] = args;
  const app = await openApp();
  try {
    if (app.config.WORKFLOWS_DIR === "off") throw new UsageError("WORKFLOWS_DIR is off");
    const { workflows: loaded, problems } = await loadWorkflows(app.config.WORKFLOWS_DIR);
    for (const p of problems) process.stderr.write(`skipped ${p.path}: ${p.reason}\n`);
    const deps = runnerDeps(app, app.log, app.config.TEXTWIRE_URL !== undefined);
    switch (sub) {
      case "list": {
        if (loaded.length === 0) return print(`no workflows in ${app.config.WORKFLOWS_DIR}`);
        const lines = ["NAME".padEnd(20) + "SCHEDULE".padEnd(18) + "TIMEZONE".padEnd(16) + "NEXT RUN".padEnd(26) + "LAST RESULT"];
        for (const wf of loaded) {
          const timezone = wf.timezone ?? "UTC";
          const unmet = unmetRequirement(wf, deps.backend.hasGenerator);
          const next = unmet ? "not scheduled" : (new Cron(wf.schedule, { timezone, paused: true }).nextRun()?.toISOString() ?? "never");
          const [last] = await deps.storage.workflows.recentRuns(wf.name, 1);
          const result = last
            ? `${last.status}${last.error ? ` (${last.error})` : ""} at ${new Date(last.startedAt).toISOString()}, ${last.handled} handled`
            : "never run";
          lines.push(wf.name.padEnd(20) + wf.schedule.padEnd(18) + timezone.padEnd(16) + next.padEnd(26) + result);
        }
        return print(lines.join("\n"));
      }
      case "run": {
        const { values, positionals } = parseArgs({ args: rest, options: { "dry-run": { type: "boolean" } }, strict: true, allowPositionals: true });
        const [name] = expectArgs(positionals, ["NAME"]);
        const wf = loaded.find((w) => w.name === name);
        if (!wf) throw new UsageError(`no workflow named "${name}" in ${app.config.WORKFLOWS_DIR}`);
        const unmet = unmetRequirement(wf, deps.backend.hasGenerator);
        if (unmet) throw new AppError("SERVICE_UNAVAILABLE", `workflow ${name} ${unmet.replace("; not scheduled", "")}`);
        const result = await runWorkflow(deps, wf, { trigger: "manual", dryRun: values["dry-run"] ?? false });
        print(result);
        if (result.status !== "ok") process.exitCode = 1;
        return;
      }
      default:
        throw new UsageError(`unknown workflows command ${sub ? `"${sub}"` : "(none)"}; use list or run`);
    }
  } finally {
    await app.storage.close();
  }
}

async function main(argv: string[]) {
  const [command, ...args] = argv;
  switch (command) {
    case "keys":
      return keys(args);
    case "workflows":
      return workflows(args);
    case "send": {
      const [phone, message] = expectArgs(args, ["PHONE", "MESSAGE"]);
      const app = await openApp();
      try {
        const sent = await sendMessage(app, parseInput(sendInput(app.config.MAX_MESSAGE_LENGTH), { phone, message }));
        return print({ success: true, message_id: sent.id, timestamp: sent.timestamp, status: sent.status });
      } finally {
        await app.storage.close();
      }
    }
    case "inbound": {
      const [phone, message] = expectArgs(args, ["PHONE", "MESSAGE"]);
      const app = await openApp();
      try {
        if (app.network.name !== "loopback") throw new UsageError(`inbound works on the loopback network (NETWORK is ${app.network.name})`);
        const input = parseInput(inboundInput(app.config.MAX_MESSAGE_LENGTH), { phone, message });
        const { record } = await recordInbound(app.storage.messages, "loopback", input);
        return print({ success: true, message_id: record.id, timestamp: record.timestamp });
      } finally {
        await app.storage.close();
      }
    }
    case undefined:
    case "help":
    case "--help":
    case "-h":
      return print(USAGE);
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

try {
  await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    process.stderr.write(`textwire: ${err.message} (see: bun run textwire help)\n`);
    process.exit(2);
  }
  if (err instanceof AppError || err instanceof ConfigError || err instanceof DatabaseError) {
    process.stderr.write(`textwire: ${err.message}\n`);
    process.exit(1);
  }
  if (err instanceof Error && err.name === "TypeError" && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS")) {
    process.stderr.write(`textwire: ${err.message} (see: bun run textwire help)\n`);
    process.exit(2);
  }
  throw err;
}
