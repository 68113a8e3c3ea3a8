import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createLineInput, updateLineInput } from "./lines/schemas";
import { createLine, deleteLine, listLines, testLine, updateLine } from "./lines/service";
import { createSecrets, parseSecretKey, SecretKeyError } from "./secrets/seal";
import { resealStored, secretKeyFile } from "./secrets/stored";
import { createApp, type App } from "./app";
import { createKey, createKeyInput, listKeys, revokeKey } from "./auth/keys";
import { ConfigError, loadConfig } from "./config";
import { backupSqlite, DatabaseError, isPostgresUrl, openStorage } from "./db";
import { AppError, parseInput } from "./errors";
import { createLogger } from "./log";
import { serveStdio } from "./mcp/stdio";
import { contactInput } from "./messages/contacts";
import { editOurMessage, unsendOurMessage } from "./messages/edits";
import { networkInfo } from "./messages/network-actions";
import { reactToMessage, removeOurReaction } from "./messages/reactions";
import { markConversationRead } from "./messages/read-state";
import { chatMessagesInput, chatsInput, createChatInput, updateChatInput } from "./messages/chat-schemas";
import { chatRecordById, listChatMessages, listChats } from "./messages/chats";
import { approveDraft, listDrafts, rejectDraft } from "./messages/drafts";
import { setChatMode } from "./messages/modes";
import { createGroup } from "./messages/groups";
import { approveInput, editInput, inboundInput, messageIdInput, reactInput, scheduledInput, sendInput } from "./messages/schemas";
import { sendMessage } from "./messages/service";
import { receiveLoopback } from "./messages/network-events";
import { setOurTyping } from "./messages/typing";
import { EVENT_TYPES } from "./vocabulary/events";
import { REACTIONS } from "./vocabulary/reactions";
import {
  createEndpoint,
  deleteEndpoint,
  listDeliveries,
  listEndpoints,
  replayEvents,
  rotateSecret,
  updateEndpoint,
} from "./webhooks/endpoints";
import { createEndpointInput, deliveriesInput, replayInput, updateEndpointInput } from "./webhooks/schemas";
import { listWorkflows, openWorkflows, runNow } from "./workflows/overview";
import { configuredRemoteBackend } from "./workflows/remote-backend";

const USAGE = `usage: bun run textwire <command>

  keys create --name NAME [--scopes SCOPE,SCOPE] [--lines ID,ID] [--reach any|known]
              [--expires-at ISO]
                            create an API key (printed once, never stored); default
                            scopes * (everything); see docs/security.md
  keys list                 list keys: name, prefix, scopes, limits, last use
  keys revoke ID|NAME       revoke a key; it stops working at once
  lines list                lines: id, name, network, address, default, enabled
  lines add NAME NETWORK [--address A] [--setting K=V]... [--credential K=V]...
            [--default] [--disabled] [--fallback LINE]
                            add a line (docs/lines.md), e.g. lines add sales twilio
                            --address +14155550100 --setting account_sid=AC…
                            --credential auth_token=…
  lines update LINE [--name N] [--address A] [--setting K=V]... [--credential K=V]...
            [--default] [--enable | --disable] [--fallback LINE | --no-fallback]
                            change a line (--setting replaces the settings; each
                            --credential replaces that one)
  lines test LINE           check a line against its network, sending nothing
  lines remove LINE         delete a line that never carried a message
  secrets rotate            re-encrypt stored credentials from OLD_SECRET_KEY (or a
                            SQLite deployment's secret.key) to SECRET_KEY
  send PHONE MESSAGE [--line LINE]
                            send a message, e.g. send +14155550123 "Hello"
  send --chat ID MESSAGE    send into a chat (a group's id from chats list)
  chats list [--kind direct|group] [--limit N]
                            chats, latest activity first: id, kind, name or participants
  chats messages ID [--limit N]
                            a chat's messages, newest first, with their senders
  chats create PHONE,PHONE,... MESSAGE [--name NAME]
                            create a group by sending its first message
  chats mode ID auto|supervised|human
                            set who answers in a chat (docs/supervision.md)
  chats drafts [--limit N]  drafts waiting for a person, oldest first
  chats approve ID [--message TEXT] | chats reject ID
                            send a draft (edited with --message) or reject it
  inbound PHONE MESSAGE     deliver an inbound message on a loopback line
  network                   the network and what it can do (reactions, typing, ...)
  react ID REACTION         react to a message: ${REACTIONS.join(", ")}
  unreact ID                take our reaction off a message
  edit ID MESSAGE           edit one of our messages (within 15 minutes, 5 times)
  unsend ID                 unsend one of our messages (within 2 minutes)
  typing PHONE on|off       start or stop our typing indicator (it stops after 60 s)
  read PHONE                mark the contact's messages read
  mcp                       serve the MCP tools over stdio for a local agent host, against
                            the server at TEXTWIRE_URL with TEXTWIRE_API_KEY (docs/mcp.md)
  workflows list            workflows in WORKFLOWS_DIR: schedule, next run, last result
  workflows run NAME [--dry-run]
                            run one workflow now and print its result; with --dry-run
                            nothing is sent and the cursor stays
  webhooks create URL [--events TYPE,TYPE] [--description TEXT]
                            add an endpoint for the events (default: every type); prints
                            it with its signing secret, shown only this once
  webhooks list             endpoints: id, state, events, URL
  webhooks update ID [--url URL] [--events TYPE,TYPE | --all-events]
                            [--description TEXT] [--enable | --disable]
  webhooks delete ID        delete an endpoint and its deliveries
  webhooks rotate-secret ID new secret, printed once; the old one also signs for 24 h
  webhooks deliveries ID [--status pending|succeeded|failed] [--limit N]
                            an endpoint's deliveries, newest first
  webhooks replay ID --since ISO
                            send the endpoint every event after that time again
  backup FILE [--force]     copy the SQLite database to FILE while servers run, checked
                            with integrity_check; --force replaces an existing FILE
                            (PostgreSQL: use pg_dump)

Event types: ${EVENT_TYPES.join(", ")}.

Configuration comes from the same environment as the server (DATABASE_URL, NETWORK, ...).`;

class UsageError extends Error {}

async function openApp() {
  const config = loadConfig();
  const storage = await openStorage(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
  // The server's start warns when secrets are stored unencrypted; a command's one-line output does not repeat it.
  return createApp(config, storage, createLogger(config.LOG_LEVEL === "debug" ? "debug" : "warn", {}, (l) => process.stderr.write(l)), undefined, { warnUnsealed: false });
}

/** Runs `work` with the app, closing its storage after. */
async function withApp<T>(work: (app: App) => Promise<T>): Promise<T> {
  const app = await openApp();
  try {
    return await work(app);
  } finally {
    await app.storage.close();
  }
}

const print = (value: unknown) => process.stdout.write(`${typeof value === "string" ? value : JSON.stringify(value, null, 2)}\n`);

/** The arguments named `names`, in order; an option where none is taken is named (a MESSAGE may start with "-"). */
function expectArgs(args: string[], names: string[]): string[] {
  const option = args.find((arg, i) => /^--?[a-z]/i.test(arg) && names[i] !== "MESSAGE");
  if (option) throw new UsageError(`unknown option ${option.split("=")[0]}`);
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
        const { values, positionals } = parseArgs({
          args: rest,
          options: { name: { type: "string" }, scopes: { type: "string" }, lines: { type: "string" }, reach: { type: "string" }, "expires-at": { type: "string" } },
          strict: true,
          allowPositionals: true,
        });
        if (!values.name || positionals.length) throw new UsageError("keys create takes --name NAME");
        const list = (text?: string) => text?.split(",").map((item) => item.trim()).filter(Boolean);
        const input = parseInput(createKeyInput, {
          name: values.name,
          scopes: list(values.scopes),
          lines: list(values.lines),
          reach: values.reach,
          expires_at: values["expires-at"],
        });
        const { key } = await createKey(storage, input);
        print(key);
        process.stderr.write(`Created key "${values.name}". Store it now: it is not shown again.\n`);
        return;
      }
      case "list": {
        expectArgs(rest, []);
        const rows = await listKeys(keys);
        if (rows.length === 0) return print("no keys stored (keys from API_KEYS are not listed)");
        const limits = (k: (typeof rows)[number]) =>
          [k.lines ? `lines ${k.lines.join(",")}` : "", k.reach === "known" ? "reach known" : "", k.expires_at ? `expires ${k.expires_at}` : ""].filter(Boolean).join("; ") || "-";
        print(["NAME".padEnd(24) + "PREFIX".padEnd(14) + "SCOPES".padEnd(32) + "LIMITS".padEnd(30) + "CREATED".padEnd(26) + "LAST USED".padEnd(26) + "STATUS"]
          .concat(rows.map((k) => k.name.padEnd(24) + `${k.prefix}…`.padEnd(14) + k.scopes.join(",").padEnd(32) + limits(k).padEnd(30) + k.created_at.padEnd(26) + (k.last_used_at ?? "never").padEnd(26) + (k.revoked_at ? `revoked ${k.revoked_at}` : "active")))
          .join("\n"));
        return;
      }
      case "revoke": {
        const [name] = expectArgs(rest, ["ID|NAME"]);
        await revokeKey(storage, name!);
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
    const set = await openWorkflows(app, app.log, configuredRemoteBackend(app.config));
    for (const p of set.problems) process.stderr.write(`skipped ${p.path}: ${p.reason}\n`);
    switch (sub) {
      case "list": {
        expectArgs(rest, []);
        const listed = await listWorkflows(set);
        if (listed.length === 0) return print(`no workflows in ${app.config.WORKFLOWS_DIR}`);
        const lines = ["NAME".padEnd(20) + "SCHEDULE".padEnd(18) + "TIMEZONE".padEnd(16) + "NEXT RUN".padEnd(26) + "LAST RESULT"];
        for (const wf of listed) {
          const next = wf.unmet ? "not scheduled" : (wf.next_run ?? "never");
          const last = wf.last_run;
          const result = last ? `${last.status}${last.error ? ` (${last.error})` : ""} at ${last.started_at}, ${last.handled} handled` : "never run";
          lines.push(wf.name.padEnd(20) + wf.schedule.padEnd(18) + wf.timezone.padEnd(16) + next.padEnd(26) + result);
        }
        return print(lines.join("\n"));
      }
      case "run": {
        const { values, positionals } = parseArgs({ args: rest, options: { "dry-run": { type: "boolean" } }, strict: true, allowPositionals: true });
        const [name] = expectArgs(positionals, ["NAME"]);
        const result = await runNow(set, name!, values["dry-run"] ?? false);
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

/** `--events a,b` as a list (the schema then names an unknown or repeated type). */
const eventList = (value: string | undefined) => value?.split(",").map((t) => t.trim());

async function webhooks(args: string[]) {
  const [sub, ...rest] = args;
  const known = ["create", "list", "update", "delete", "rotate-secret", "deliveries", "replay"];
  if (!sub || !known.includes(sub)) throw new UsageError(`unknown webhooks command ${sub ? `"${sub}"` : "(none)"}; use ${known.join(", ")}`);
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      events: { type: "string" },
      "all-events": { type: "boolean" },
      description: { type: "string" },
      url: { type: "string" },
      enable: { type: "boolean" },
      disable: { type: "boolean" },
      status: { type: "string" },
      limit: { type: "string" },
      since: { type: "string" },
    },
    strict: true,
    allowPositionals: true,
  });
  const allowed: Record<string, string[]> = {
    create: ["events", "description"],
    list: [],
    update: ["url", "events", "all-events", "description", "enable", "disable"],
    delete: [],
    "rotate-secret": [],
    deliveries: ["status", "limit"],
    replay: ["since"],
  };
  const extra = Object.keys(values).find((name) => !allowed[sub]!.includes(name));
  if (extra) throw new UsageError(`webhooks ${sub} does not take --${extra}`);
  if (sub === "update" && Object.keys(values).length === 0) throw new UsageError(`webhooks update ID needs at least one of ${allowed.update!.map((name) => `--${name}`).join(", ")}`);
  const app = await openApp();
  const store = app.storage.webhooks;
  const deps = { storage: app.storage, webhooks: store, allowPrivateUrls: app.config.ALLOW_PRIVATE_URLS, actorKeyId: null, secrets: app.secrets };
  try {
    switch (sub) {
      case "create": {
        const [url] = expectArgs(positionals, ["URL"]);
        const input = parseInput(createEndpointInput, { url, events: eventList(values.events), description: values.description });
        print(await createEndpoint(deps, input));
        process.stderr.write("Created the endpoint. Store its secret now: it is not shown again.\n");
        return;
      }
      case "list": {
        expectArgs(positionals, []);
        const rows = await listEndpoints(store);
        if (rows.length === 0) return print("no webhook endpoints");
        const state = (e: (typeof rows)[number]) => (e.enabled ? "enabled" : `disabled${e.disabled_reason ? ` (${e.disabled_reason})` : ""}`);
        print(["ID".padEnd(36) + "STATE".padEnd(20) + "EVENTS".padEnd(50) + "URL"]
          .concat(rows.map((e) => e.id.padEnd(36) + state(e).padEnd(20) + (e.events?.join(",") ?? "all").padEnd(50) + e.url))
          .join("\n"));
        return;
      }
      case "update": {
        const [id] = expectArgs(positionals, ["ID"]);
        if (values.events !== undefined && values["all-events"]) throw new UsageError("give --events or --all-events, not both");
        if (values.enable && values.disable) throw new UsageError("give --enable or --disable, not both");
        const input = parseInput(updateEndpointInput, {
          id,
          url: values.url,
          events: values["all-events"] ? null : eventList(values.events),
          description: values.description,
          enabled: values.enable ? true : values.disable ? false : undefined,
        });
        return print(await updateEndpoint(deps, input));
      }
      case "delete": {
        const [id] = expectArgs(positionals, ["ID"]);
        await deleteEndpoint(deps, id!);
        return print(`deleted ${id}`);
      }
      case "rotate-secret": {
        const [id] = expectArgs(positionals, ["ID"]);
        print(await rotateSecret(deps, id!));
        process.stderr.write("New secret made. Store it now: it is not shown again; the old one also signs for 24 hours.\n");
        return;
      }
      case "deliveries": {
        const [id] = expectArgs(positionals, ["ID"]);
        const input = parseInput(deliveriesInput, { id, status: values.status, limit: values.limit });
        const rows = await listDeliveries(store, input);
        if (rows.length === 0) return print(`no deliveries${input.status ? ` ${input.status}` : ""} for ${id}`);
        const last = (d: (typeof rows)[number]) => (d.last_status !== null ? `HTTP ${d.last_status}` : (d.last_error ?? "-"));
        print(["ID".padEnd(38) + "EVENT".padEnd(38) + "TYPE".padEnd(24) + "STATE".padEnd(11) + "ATTEMPTS".padEnd(10) + "LAST".padEnd(24) + "NEXT ATTEMPT"]
          .concat(rows.map((d) => d.id.padEnd(38) + d.event_id.padEnd(38) + d.event_type.padEnd(24) + d.state.padEnd(11) + String(d.attempts).padEnd(10) + last(d).slice(0, 22).padEnd(24) + (d.next_attempt_at ?? "-")))
          .join("\n"));
        return;
      }
      case "replay": {
        const [id] = expectArgs(positionals, ["ID"]);
        if (values.since === undefined) throw new UsageError("webhooks replay takes --since ISO, e.g. --since 2026-11-21T09:30:00Z");
        const queued = await replayEvents(store, parseInput(replayInput, { id, since: values.since }));
        return print({ success: true, queued });
      }
    }
  } finally {
    await app.storage.close();
  }
}

/** `backup FILE [--force]`: exit 0 with a summary, 1 when it failed, 2 on PostgreSQL (pg_dump is the tool). */
async function backup(args: string[]) {
  const { values, positionals } = parseArgs({ args, options: { force: { type: "boolean" } }, strict: true, allowPositionals: true });
  const [file] = expectArgs(positionals, ["FILE"]);
  const { DATABASE_URL } = loadConfig();
  if (isPostgresUrl(DATABASE_URL)) {
    process.stderr.write(
      "textwire: backup copies a SQLite database; on PostgreSQL use pg_dump, e.g.\n" +
        "  pg_dump --format=custom --file=textwire.dump \"$DATABASE_URL\"\n" +
        "and pg_restore to restore it (docs/postgresql.md, section \"Backups\")\n",
    );
    process.exit(2);
  }
  const summary = backupSqlite(DATABASE_URL, file!, { force: values.force ?? false });
  print(`backed up to ${summary.path}\n  size      ${summary.bytes} bytes\n  messages  ${summary.messages}\n  integrity ok`);
}

async function chats(args: string[]) {
  const [sub, ...rest] = args;
  const known = ["list", "messages", "create", "mode", "drafts", "approve", "reject"];
  if (!sub || !known.includes(sub)) throw new UsageError(`unknown chats command ${sub ? `"${sub}"` : "(none)"}; use ${known.join(", ")}`);
  const { values, positionals } = parseArgs({
    args: rest,
    options: { kind: { type: "string" }, limit: { type: "string" }, name: { type: "string" }, message: { type: "string" } },
    strict: true,
    allowPositionals: true,
  });
  const allowed: Record<string, string[]> = { list: ["kind", "limit"], messages: ["limit"], create: ["name"], mode: [], drafts: ["limit"], approve: ["message"], reject: [] };
  const extra = Object.keys(values).find((name) => !allowed[sub]!.includes(name));
  if (extra) throw new UsageError(`chats ${sub} does not take --${extra}`);
  return withApp(async (app) => {
    switch (sub) {
      case "list": {
        expectArgs(positionals, []);
        const page = await listChats(app.storage, parseInput(chatsInput, { kind: values.kind, limit: values.limit }));
        if (page.chats.length === 0) return print("no chats");
        const shown = (c: (typeof page.chats)[number]) => c.name ?? c.participants.join(", ");
        return print(["ID".padEnd(38) + "KIND".padEnd(8) + "LAST MESSAGE".padEnd(29) + "NAME OR PARTICIPANTS"]
          .concat(page.chats.map((c) => c.id.padEnd(38) + c.kind.padEnd(8) + (c.last_message_at ?? "-").padEnd(29) + shown(c)))
          .join("\n"));
      }
      case "messages": {
        const [id] = expectArgs(positionals, ["ID"]);
        return print(await listChatMessages(app.storage, parseInput(chatMessagesInput, { id, limit: values.limit })));
      }
      // The CLI acts as the operator: `by` null in the events, as for its other admin actions.
      case "mode": {
        const [id, mode] = expectArgs(positionals, ["ID", "MODE"]);
        const input = parseInput(updateChatInput, { id, mode });
        await setChatMode(app, input.id, input.mode!, null);
        return print(await chatRecordById(app.storage, input.id));
      }
      case "drafts":
        expectArgs(positionals, []);
        return print(await listDrafts(app, parseInput(scheduledInput, { limit: values.limit })));
      case "approve": {
        const [id] = expectArgs(positionals, ["ID"]);
        const input = parseInput(approveInput(app.config.MAX_MESSAGE_LENGTH), { id, message: values.message });
        return print(await approveDraft(app, input.id, input.message, null));
      }
      case "reject": {
        const [id] = expectArgs(positionals, ["ID"]);
        return print(await rejectDraft(app, parseInput(messageIdInput, { id }).id, null));
      }
      default: {
        const [phones, message] = expectArgs(positionals, ["PHONE,PHONE,...", "MESSAGE"]);
        const input = parseInput(createChatInput(app.config.MAX_MESSAGE_LENGTH), { participants: (phones ?? "").split(",").map((p) => p.trim()), name: values.name, message });
        return print(await createGroup(app, input));
      }
    }
  });
}

/** The settings whose values are numbers (docs/lines.md); every other setting and every credential is text, digits or not (a password of digits). */
const NUMERIC_SETTINGS = new Set(["send_timeout_ms", "sim_number"]);

/** `K=V` flags as an object; a numeric setting's digits are a number. */
function pairs(flag: "setting" | "credential", given: string[] | undefined): Record<string, unknown> | undefined {
  if (!given) return undefined;
  return Object.fromEntries(
    given.map((pair) => {
      const at = pair.indexOf("=");
      if (at < 1) throw new UsageError(`--${flag} takes KEY=VALUE, got "${pair}"`);
      const key = pair.slice(0, at);
      const value = pair.slice(at + 1);
      return [key, flag === "setting" && NUMERIC_SETTINGS.has(key) && /^\d+$/.test(value) ? Number(value) : value];
    }),
  );
}

async function lines(args: string[]) {
  const [sub, ...rest] = args;
  const known = ["list", "add", "update", "test", "remove"];
  if (!sub || !known.includes(sub)) throw new UsageError(`unknown lines command ${sub ? `"${sub}"` : "(none)"}; use ${known.join(", ")}`);
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      name: { type: "string" },
      address: { type: "string" },
      setting: { type: "string", multiple: true },
      credential: { type: "string", multiple: true },
      default: { type: "boolean" },
      enable: { type: "boolean" },
      disable: { type: "boolean" },
      disabled: { type: "boolean" },
      fallback: { type: "string" },
      "no-fallback": { type: "boolean" },
    },
    strict: true,
    allowPositionals: true,
  });
  const allowed: Record<string, string[]> = {
    list: [],
    test: [],
    remove: [],
    add: ["address", "setting", "credential", "default", "disabled", "fallback"],
    update: ["name", "address", "setting", "credential", "default", "enable", "disable", "fallback", "no-fallback"],
  };
  const extra = Object.keys(values).find((name) => !allowed[sub]!.includes(name));
  if (extra) throw new UsageError(`lines ${sub} does not take --${extra}`);
  if (values.enable && values.disable) throw new UsageError("lines update takes --enable or --disable, not both");
  return withApp(async (app) => {
    switch (sub) {
      case "list": {
        expectArgs(positionals, []);
        const all = listLines(app);
        return print(["ID".padEnd(22) + "NAME".padEnd(16) + "NETWORK".padEnd(13) + "ADDRESS".padEnd(18) + "STATE"]
          .concat(all.map((l) => l.id.padEnd(22) + l.name.padEnd(16) + l.network.padEnd(13) + (l.address ?? "-").padEnd(18) + [l.default ? "default" : "", l.enabled ? "enabled" : "disabled", l.managed === "env" ? "from the environment" : ""].filter(Boolean).join(", ")))
          .join("\n"));
      }
      case "add": {
        const [name, network] = expectArgs(positionals, ["NAME", "NETWORK"]);
        const input = parseInput(createLineInput, {
          name,
          network,
          address: values.address,
          settings: pairs("setting", values.setting),
          credentials: pairs("credential", values.credential),
          default: values.default,
          enabled: values.disabled ? false : undefined,
          fallback: values.fallback,
        });
        return print(await createLine(app, input));
      }
      case "update": {
        const [ref] = expectArgs(positionals, ["LINE"]);
        const patch = {
          name: values.name,
          address: values.address,
          settings: pairs("setting", values.setting),
          credentials: pairs("credential", values.credential),
          default: values.default,
          enabled: values.enable ? true : values.disable ? false : undefined,
          fallback: values["no-fallback"] ? null : values.fallback,
        };
        if (Object.values(patch).every((v) => v === undefined)) throw new UsageError("lines update takes at least one flag: --name, --address, --setting, --credential, --default, --enable, --disable, --fallback, --no-fallback");
        return print(await updateLine(app, ref!, parseInput(updateLineInput, patch)));
      }
      case "test": {
        const [ref] = expectArgs(positionals, ["LINE"]);
        const result = await testLine(app, ref!);
        print(result);
        if (!result.ok) process.exitCode = 1;
        return;
      }
      default: {
        const [ref] = expectArgs(positionals, ["LINE"]);
        await deleteLine(app, ref!);
        return print(`deleted ${ref}`);
      }
    }
  });
}

/**
 * `secrets rotate`: every stored secret opened with the old key (OLD_SECRET_KEY; on SQLite,
 * without it, the secret.key beside the database; neither: the secrets are not sealed yet)
 * and sealed again with SECRET_KEY. Nothing is written unless every one opens.
 */
async function secrets(args: string[]) {
  const [sub, ...rest] = args;
  if (sub !== "rotate") throw new UsageError(`unknown secrets command ${sub ? `"${sub}"` : "(none)"}; use rotate`);
  expectArgs(rest, []);
  const config = loadConfig();
  if (!config.SECRET_KEY) throw new UsageError("secrets rotate needs SECRET_KEY: the new key (openssl rand -base64 32)");
  const storage = await openStorage(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
  try {
    const file = isPostgresUrl(config.DATABASE_URL) || config.DATABASE_URL === ":memory:" ? undefined : secretKeyFile(config.DATABASE_URL);
    const old = config.OLD_SECRET_KEY ?? (file && existsSync(file) ? readFileSync(file, "utf8") : undefined);
    const from = createSecrets(old === undefined ? undefined : parseSecretKey(old));
    const rewritten = await resealStored(storage, from, createSecrets(parseSecretKey(config.SECRET_KEY)));
    print(`re-encrypted ${rewritten} stored secret(s) under SECRET_KEY; start every process with this SECRET_KEY now${file && existsSync(file) ? ` (and remove ${file})` : ""}`);
  } finally {
    await storage.close();
  }
}

async function main(argv: string[]) {
  const [command, ...args] = argv;
  switch (command) {
    case "keys":
      return keys(args);
    case "lines":
      return lines(args);
    case "secrets":
      return secrets(args);
    case "webhooks":
      return webhooks(args);
    case "workflows":
      return workflows(args);
    case "backup":
      return backup(args);
    case "chats":
      return chats(args);
    case "send": {
      // To a phone (PHONE MESSAGE) or into a chat (--chat ID MESSAGE), through --line LINE when the two are last; a message may start with "-", so no option parser.
      const line = args.length >= 4 && args.at(-2) === "--line" ? args.at(-1) : undefined;
      const given = line === undefined ? args : args.slice(0, -2);
      const chat = given[0] === "--chat";
      const [to, message] = expectArgs(chat ? given.slice(1) : given, [chat ? "ID" : "PHONE", "MESSAGE"]);
      const target = chat ? { chat_id: to } : { phone: to };
      return withApp(async (app) => {
        const sent = await sendMessage(app, parseInput(sendInput(app.config.MAX_MESSAGE_LENGTH), { ...target, message, line }));
        print({ success: true, message_id: sent.id, timestamp: sent.timestamp, status: sent.status });
      });
    }
    case "inbound": {
      const [phone, message] = expectArgs(args, ["PHONE", "MESSAGE"]);
      return withApp(async (app) => {
        if (!app.lines.all().some((l) => l.row.network === "loopback")) throw new UsageError(`inbound works on a loopback line (NETWORK is ${app.config.NETWORK}, and no loopback line was added)`);
        const input = parseInput(inboundInput(app.config.MAX_MESSAGE_LENGTH), { phone, message });
        const answer = await receiveLoopback(app, { phone: input.phone, message: input.message ?? "" });
        print(answer);
      });
    }
    case "network":
      expectArgs(args, []);
      return withApp(async (app) => print(networkInfo(app.lines.default())));
    case "react": {
      const [id, reaction] = expectArgs(args, ["ID", "REACTION"]);
      return withApp(async (app) => {
        const input = parseInput(reactInput, { id, reaction });
        print({ success: true, message: await reactToMessage(app, input.id, input.reaction) });
      });
    }
    case "unreact": {
      const [id] = expectArgs(args, ["ID"]);
      return withApp(async (app) => print({ success: true, message: await removeOurReaction(app, parseInput(messageIdInput, { id }).id) }));
    }
    case "edit": {
      const [id, message] = expectArgs(args, ["ID", "MESSAGE"]);
      return withApp(async (app) => {
        const input = parseInput(editInput(app.config.MAX_MESSAGE_LENGTH), { id, message });
        print({ success: true, message: await editOurMessage(app, input.id, input.message) });
      });
    }
    case "unsend": {
      const [id] = expectArgs(args, ["ID"]);
      return withApp(async (app) => print({ success: true, message: await unsendOurMessage(app, parseInput(messageIdInput, { id }).id) }));
    }
    case "typing": {
      const [phone, state] = expectArgs(args, ["PHONE", "on|off"]);
      if (state !== "on" && state !== "off") throw new UsageError(`typing takes on or off, got "${state}"`);
      return withApp(async (app) => print({ success: true, ...(await setOurTyping(app, parseInput(contactInput, { phone }).phone, state === "on")) }));
    }
    case "read": {
      const [phone] = expectArgs(args, ["PHONE"]);
      return withApp(async (app) => print({ success: true, contact: await markConversationRead(app, parseInput(contactInput, { phone }).phone) }));
    }
    case "mcp": {
      expectArgs(args, []);
      const missing = ["TEXTWIRE_URL", "TEXTWIRE_API_KEY"].filter((name) => !process.env[name]);
      if (missing.length) throw new UsageError(`mcp needs ${missing.join(" and ")}: the Textwire server (e.g. http://127.0.0.1:3000) and an API key for it`);
      const config = loadConfig();
      // Standard output is the protocol's: the log goes to standard error.
      const log = createLogger(config.LOG_LEVEL, { component: "mcp" }, (line) => process.stderr.write(line));
      return serveStdio({ url: config.TEXTWIRE_URL!, apiKey: config.TEXTWIRE_API_KEY!, maxMessageLength: config.MAX_MESSAGE_LENGTH, log });
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
  if (err instanceof AppError || err instanceof ConfigError || err instanceof DatabaseError || err instanceof SecretKeyError) {
    process.stderr.write(`textwire: ${err.message}\n`);
    process.exit(1);
  }
  if (err instanceof Error && err.name === "TypeError" && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS")) {
    process.stderr.write(`textwire: ${err.message} (see: bun run textwire help)\n`);
    process.exit(2);
  }
  throw err;
}
