import type { z } from "zod";
import type { Config } from "../config";
import type { LinePatch, LineRow, Repositories, Storage } from "../db/port";
import { AppError, fieldIssues, issuesMessage } from "../errors";
import { errorText, type Logger } from "../log";
import { isoTime } from "../messages/time";
import type { NetworkDriver } from "../network/driver";
import type { Secrets } from "../secrets/seal";
import { DEFAULT_LINE_ID, type LineNetwork } from "../vocabulary/lines";
import { chooseLine } from "./choose";
import { buildDriver, deploymentProblem, webhookPathOf } from "./drivers";
import type { Line, LineRegistry } from "./registry";
import { isPhoneAddress, NETWORK_FIELDS, type CreateLineInput, type LineCredentials, type LineRecord, type LineSettings, type UpdateLineInput } from "./schemas";

export interface LinesDeps {
  storage: Storage;
  lines: LineRegistry;
  secrets: Secrets;
  config: Config;
  log: Logger;
  /** The key acting on a change (the event's `actor_key_id`); null: the CLI. */
  actorKeyId?: string | null;
}

/** A line as the API shows it: settings but never credentials; `webhook_url` absolute. */
export function toLineRecord(line: Line, lines: LineRegistry, config: Pick<Config, "PUBLIC_URL">): LineRecord {
  const { row } = line;
  return {
    id: row.id,
    name: row.name,
    network: row.network,
    address: row.address,
    enabled: row.enabled,
    default: lines.default().row.id === row.id,
    fallback: row.fallback,
    capabilities: { ...line.driver.capabilities },
    settings: line.settings,
    webhook_url: config.PUBLIC_URL && row.network !== "loopback" ? `${config.PUBLIC_URL.replace(/\/+$/, "")}${webhookPathOf(row)}` : null,
    managed: row.managed,
    created_at: isoTime(row.createdAt * 1000),
    updated_at: isoTime(row.updatedAt * 1000),
  };
}

/** The line `ref` (its id or name) names, or 404. */
export function lineByRef(lines: LineRegistry, ref: string): Line {
  const line = lines.find(ref);
  if (!line) throw new AppError("NOT_FOUND", `no line ${JSON.stringify(ref)}`);
  return line;
}

export const listLines = (deps: Pick<LinesDeps, "lines" | "config">): LineRecord[] => deps.lines.all().map((l) => toLineRecord(l, deps.lines, deps.config));

export const getLine = (deps: Pick<LinesDeps, "lines" | "config">, ref: string): LineRecord => toLineRecord(lineByRef(deps.lines, ref), deps.lines, deps.config);

/** `value` read by `schema`, or 400 naming each field under `prefix` (settings.url, credentials.auth_token). */
function parseFields<S extends z.ZodType>(schema: S, value: unknown, prefix: string): z.output<S> {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issues = fieldIssues(
    parsed.error.issues.map((i) => {
      // An unknown field is named by its own path.
      const keys = i.code === "unrecognized_keys" ? (i as { keys: string[] }).keys : [];
      return { path: [prefix, ...i.path, ...keys.slice(0, 1)], message: keys.length ? "is not a setting of this network" : i.message };
    }),
  );
  throw new AppError("BAD_REQUEST", issuesMessage(issues));
}

/** What a line's fields must hold for its network: the address our number (Twilio, Android), the deployment able to take its webhooks. */
function checkLine(network: LineNetwork, address: string | null, config: Config): void {
  if (network === "twilio" && (!address || !(isPhoneAddress(address) || /^MG[0-9a-fA-F]{32}$/.test(address)))) {
    throw new AppError("BAD_REQUEST", "address: a twilio line's address is its number in E.164 (or a Messaging Service SID, MG…)");
  }
  if (network === "android" && address !== null && !isPhoneAddress(address)) throw new AppError("BAD_REQUEST", "address: an android line's address is the phone's number in E.164");
  const problem = deploymentProblem(network, config);
  if (problem) throw new AppError("UNPROCESSABLE_CONTENT", problem);
}

/** The id of the line a `fallback` field names (400 when none; a line is not its own fallback). */
function fallbackId(lines: LineRegistry, ref: string | null | undefined, self: string | undefined): string | null {
  if (ref === null || ref === undefined) return null;
  const found = lines.find(ref);
  if (!found) throw new AppError("BAD_REQUEST", `fallback: no line ${JSON.stringify(ref)}`);
  if (found.row.id === self) throw new AppError("BAD_REQUEST", "fallback: a line cannot be its own fallback");
  return found.row.id;
}

/** A line's driver built from what is about to be stored, so that settings a driver refuses are refused now (422), not at the first send. */
function tryDriver(row: Pick<LineRow, "id" | "network" | "managed" | "address">, settings: LineSettings, credentials: LineCredentials, deps: LinesDeps) {
  try {
    return buildDriver(row, settings, credentials, deps);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError("UNPROCESSABLE_CONTENT", `settings: ${errorText(err)}`);
  }
}

/**
 * Writes a line change and its event in one transaction (the record as the change leaves it,
 * its driver already built from it), then reads the lines again here (other processes within LINES_REFRESH_MS).
 */
async function commit(
  deps: LinesDeps,
  type: "line.created" | "line.updated",
  built: Pick<Line, "settings" | "driver">,
  write: (tx: Repositories) => Promise<LineRow | undefined>,
): Promise<Line> {
  const row = await deps.storage.transaction(async (tx) => {
    const written = await write(tx);
    if (!written) throw new AppError("NOT_FOUND", "no such line");
    const record = toLineRecord({ row: written, settings: built.settings, driver: built.driver }, deps.lines, deps.config);
    // The registry has not seen this change yet: the mark is as written (the environment's line keeps it while no line took it).
    record.default = written.isDefault || (written.id === DEFAULT_LINE_ID && deps.lines.default().row.id === DEFAULT_LINE_ID);
    await tx.events.append(type, { data: { ...record, actor_key_id: deps.actorKeyId ?? null } });
    return written;
  });
  await deps.lines.refresh();
  return deps.lines.get(row.id);
}

/**
 * Networks whose webhooks are registered through their API (Android) get this line's URL, again
 * on every change and test (the same ids replace). On a change it comes before anything is
 * stored: a refusal (502) leaves the line as it was; a disabled line registers nothing.
 */
async function registerWebhooks(line: { name: string; network: LineNetwork; enabled: boolean }, driver: Pick<NetworkDriver, "register">): Promise<void> {
  if (!driver.register || !line.enabled) return;
  await driver.register().catch((err) => {
    throw new AppError(
      "BAD_GATEWAY",
      `line ${line.name}: the ${line.network} network did not take the webhook registration: ${errorText(err)}; nothing was changed (a disabled line is saved without it)`,
    );
  });
}

/** POST /api/lines: a line of any network, its credentials sealed (src/secrets), event `line.created`. */
export async function createLine(deps: LinesDeps, input: CreateLineInput): Promise<LineRecord> {
  const fields = NETWORK_FIELDS[input.network];
  const settings = parseFields(fields.settings, input.settings, "settings") as LineSettings;
  const credentials = parseFields(fields.credentials, input.credentials, "credentials") as LineCredentials;
  const address = input.address ?? null;
  checkLine(input.network, address, deps.config);
  if (deps.lines.find(input.name)) throw new AppError("CONFLICT", `name: a line named ${input.name} exists`);
  const id = `ln_${Bun.randomUUIDv7().replaceAll("-", "").slice(-16)}`;
  const driver = tryDriver({ id, network: input.network, managed: "api", address }, settings, credentials, deps);
  const fallback = fallbackId(deps.lines, input.fallback, id);
  await registerWebhooks({ name: input.name, network: input.network, enabled: input.enabled ?? true }, driver);
  const line = await commit(deps, "line.created", { settings, driver }, async (tx) => {
    if (input.default) await tx.lines.clearDefault();
    const row = await tx.lines.insert({
      id,
      name: input.name,
      network: input.network,
      address,
      enabled: input.enabled ?? true,
      isDefault: input.default ?? false,
      fallback,
      settings: JSON.stringify(settings),
      credentials: deps.secrets.seal(JSON.stringify(credentials)),
      managed: "api",
    });
    if (!row) throw new AppError("CONFLICT", `name: a line named ${input.name} exists`);
    return row;
  });
  return toLineRecord(line, deps.lines, deps.config);
}

/**
 * PATCH /api/lines/{id}: the fields given change (`settings` replace the settings; each
 * credential given replaces that one); event `line.updated`. The environment's line changes
 * only through the environment, except taking the default mark back (409 otherwise).
 */
export async function updateLine(deps: LinesDeps, ref: string, input: UpdateLineInput): Promise<LineRecord> {
  const line = lineByRef(deps.lines, ref);
  const { row } = line;
  if (row.managed === "env" && Object.entries(input).some(([k, v]) => v !== undefined && !(k === "default" && v === true))) {
    throw new AppError("CONFLICT", `line ${row.name} is managed by the environment (NETWORK and its variables): change it there; only "default": true is taken here`);
  }
  if (input.name !== undefined && input.name !== row.name && deps.lines.find(input.name)) throw new AppError("CONFLICT", `name: a line named ${input.name} exists`);
  const fields = NETWORK_FIELDS[row.network];
  const settings = input.settings === undefined ? line.settings : (parseFields(fields.settings, input.settings, "settings") as LineSettings);
  const stored: LineCredentials = row.credentials ? JSON.parse(deps.secrets.open(row.credentials)) : {};
  const credentials = input.credentials === undefined ? stored : (parseFields(fields.credentials.partial(), input.credentials, "credentials") as LineCredentials);
  const merged = { ...stored, ...credentials };
  const address = input.address === undefined ? row.address : input.address;
  if (row.managed === "api") checkLine(row.network, address, deps.config);
  const driver = row.managed === "api" ? tryDriver({ ...row, address }, settings, merged, deps) : line.driver;
  if (input.enabled === false && deps.lines.default().row.id === row.id && input.default !== false) {
    throw new AppError("CONFLICT", `enabled: line ${row.name} is the default line; mark another line default first`);
  }
  const patch: LinePatch = {
    name: input.name ?? row.name,
    network: row.network,
    address,
    enabled: input.enabled ?? row.enabled,
    isDefault: input.default ?? row.isDefault,
    fallback: input.fallback === undefined ? row.fallback : fallbackId(deps.lines, input.fallback, row.id),
    settings: JSON.stringify(settings),
    credentials: row.managed === "env" ? null : deps.secrets.seal(JSON.stringify(merged)),
  };
  if (row.managed === "api") await registerWebhooks({ name: patch.name, network: row.network, enabled: patch.enabled }, driver);
  const updated = await commit(deps, "line.updated", { settings, driver }, async (tx) => {
    if (input.default) await tx.lines.clearDefault();
    return tx.lines.update(row.id, patch);
  });
  return toLineRecord(updated, deps.lines, deps.config);
}

/** DELETE /api/lines/{id}: only a line that never carried a message or a group (409: disable it); lines falling back to it lose that; event `line.deleted`. */
export async function deleteLine(deps: LinesDeps, ref: string): Promise<LineRecord> {
  const line = lineByRef(deps.lines, ref);
  const { row } = line;
  if (row.id === DEFAULT_LINE_ID) throw new AppError("CONFLICT", `line ${row.name} is the environment's (NETWORK): it cannot be deleted`);
  if (deps.lines.default().row.id === row.id) throw new AppError("CONFLICT", `line ${row.name} is the default line; mark another line default first`);
  if (await deps.storage.lines.inUse(row.id)) throw new AppError("CONFLICT", `line ${row.name} has messages: disable it instead (PATCH {"enabled": false})`);
  const record = toLineRecord(line, deps.lines, deps.config);
  await deps.storage.transaction(async (tx) => {
    await tx.lines.dropFallback(row.id);
    if (!(await tx.lines.delete(row.id))) throw new AppError("NOT_FOUND", `no line ${JSON.stringify(ref)}`);
    await tx.events.append("line.deleted", { data: { ...record, actor_key_id: deps.actorKeyId ?? null } });
  });
  await deps.lines.refresh();
  await line.driver.unregister?.().catch((err) => deps.log.warn("the line's webhooks were not removed from its network", { line: row.name, error: errorText(err) }));
  return record;
}

/** POST /api/lines/{id}/test: the line checked against its network, sending nothing (and its webhooks registered again where the network takes them). */
export async function testLine(deps: LinesDeps, ref: string): Promise<{ ok: boolean; detail: string }> {
  const line = lineByRef(deps.lines, ref);
  const result = (await line.driver.check?.()) ?? { ok: true, detail: `${line.row.network}: nothing to check` };
  if (result.ok && line.driver.register && line.row.enabled) {
    try {
      await line.driver.register();
      return { ok: true, detail: `${result.detail}; webhooks registered` };
    } catch (err) {
      return { ok: false, detail: `${result.detail}; but registering the webhooks failed: ${errorText(err)}` };
    }
  }
  return result;
}

/**
 * Where a send to `phone` would go now, sending nothing (the console's composer shows it):
 * the line routing picks and why, and the line it would go through instead when the phone is
 * known not to have iMessage (src/lines/choose.ts).
 */
export async function previewRoute(deps: LinesDeps, phone: string): Promise<{ line: LineRecord; reason: string; rerouted_from: string | null }> {
  const contact = await deps.storage.contacts.beforeSend(phone);
  const chosen = await chooseLine(deps, { stickyLine: contact.lineId }, phone);
  return { line: toLineRecord(chosen.line, deps.lines, deps.config), reason: chosen.rerouted ? chosen.rerouted.reason : chosen.reason, rerouted_from: chosen.rerouted?.from.row.id ?? null };
}
