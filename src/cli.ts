import { parseArgs } from "node:util";
import { createApp } from "./app";
import { createKey, listKeys, revokeKey } from "./auth/keys";
import { ConfigError, loadConfig } from "./config";
import { openDb } from "./db/client";
import { AppError, parseInput } from "./errors";
import { createLogger } from "./log";
import { inboundInput, sendInput } from "./messages/schemas";
import { recordInbound, sendMessage } from "./messages/service";

const USAGE = `usage: bun run textwire <command>

  keys create --name NAME   create an API key (printed once, never stored)
  keys list                 list keys by name and prefix
  keys revoke NAME          revoke a key; it stops working at once
  send PHONE MESSAGE        send a message, e.g. send +14155550123 "Hello"
  inbound PHONE MESSAGE     deliver an inbound message on the loopback network

Configuration comes from the same environment as the server (DATABASE_URL, NETWORK, ...).`;

class UsageError extends Error {}

function openApp() {
  const config = loadConfig();
  const db = openDb(config.DATABASE_URL);
  return createApp(config, db, createLogger(config.LOG_LEVEL === "debug" ? "debug" : "warn", {}, (l) => process.stderr.write(l)));
}

const print = (value: unknown) => process.stdout.write(`${typeof value === "string" ? value : JSON.stringify(value, null, 2)}\n`);

function expectArgs(args: string[], names: string[]): string[] {
  if (args.length !== names.length) throw new UsageError(`expected ${names.join(" ")}, got ${args.length} argument(s)`);
  return args;
}

async function keys(args: string[]) {
  const [sub, ...rest] = args;
  const { db } = openApp();
  try {
    switch (sub) {
      case "create": {
        const { values, positionals } = parseArgs({ args: rest, options: { name: { type: "string" } }, strict: true, allowPositionals: true });
        if (!values.name || positionals.length) throw new UsageError("keys create takes --name NAME");
        const { key } = createKey(db, values.name);
        print(key);
        process.stderr.write(`Created key "${values.name}". Store it now: it is not shown again.\n`);
        return;
      }
      case "list": {
        const rows = listKeys(db);
        if (rows.length === 0) return print("no keys stored (keys from API_KEYS are not listed)");
        print(["NAME".padEnd(24) + "PREFIX".padEnd(14) + "CREATED".padEnd(26) + "STATUS"]
          .concat(rows.map((k) => k.name.padEnd(24) + `${k.prefix}…`.padEnd(14) + k.createdAt.padEnd(26) + (k.revokedAt ? `revoked ${k.revokedAt}` : "active")))
          .join("\n"));
        return;
      }
      case "revoke": {
        const [name] = expectArgs(rest, ["NAME"]);
        revokeKey(db, name!);
        print(`revoked ${name}`);
        return;
      }
      default:
        throw new UsageError(`unknown keys command ${sub ? `"${sub}"` : "(none)"}; use create, list or revoke`);
    }
  } finally {
    db.$client.close();
  }
}

async function main(argv: string[]) {
  const [command, ...args] = argv;
  switch (command) {
    case "keys":
      return keys(args);
    case "send": {
      const [phone, message] = expectArgs(args, ["PHONE", "MESSAGE"]);
      const app = openApp();
      try {
        const sent = await sendMessage(app, parseInput(sendInput(app.config.MAX_MESSAGE_LENGTH), { phone, message }));
        return print({ success: true, message_id: sent.id, timestamp: sent.timestamp, status: sent.status });
      } finally {
        app.db.$client.close();
      }
    }
    case "inbound": {
      const [phone, message] = expectArgs(args, ["PHONE", "MESSAGE"]);
      const app = openApp();
      try {
        if (app.network.name !== "loopback") throw new UsageError(`inbound works on the loopback network (NETWORK is ${app.network.name})`);
        const input = parseInput(inboundInput(app.config.MAX_MESSAGE_LENGTH), { phone, message });
        const { record } = recordInbound(app, "loopback", input);
        return print({ success: true, message_id: record.id, timestamp: record.timestamp });
      } finally {
        app.db.$client.close();
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
  if (err instanceof AppError || err instanceof ConfigError) {
    process.stderr.write(`textwire: ${err.message}\n`);
    process.exit(1);
  }
  if (err instanceof Error && err.name === "TypeError" && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS")) {
    process.stderr.write(`textwire: ${err.message} (see: bun run textwire help)\n`);
    process.exit(2);
  }
  throw err;
}
