import type { LineManager, LineNetwork } from "../vocabulary/lines";
import { all, changed, declare, get, run, sql } from "./sql";

/** A line as stored (src/lines/records.ts makes the API's record of it). Times in ms. */
export interface LineRow {
  id: string;
  name: string;
  network: LineNetwork;
  address: string | null;
  enabled: boolean;
  isDefault: boolean;
  fallback: string | null;
  /** JSON of the network's non-secret settings. */
  settings: string;
  /** JSON of its secrets, sealed when a SECRET_KEY is set (src/secrets); null on the environment's line. */
  credentials: string | null;
  managed: LineManager;
  createdAt: number;
  updatedAt: number;
}

export type NewLine = Omit<LineRow, "createdAt" | "updatedAt">;
export type LinePatch = Omit<LineRow, "id" | "managed" | "createdAt" | "updatedAt">;

/** Where each line stands: what a process compares to see whether its drivers are current. */
export interface LineVersion {
  id: string;
  updatedAt: number;
}

/** Lines (src/lines): few rows, read whole into each process's memory and refreshed when one changes. */
export interface LineRepository {
  list(): Promise<LineRow[]>;
  versions(): Promise<LineVersion[]>;
  /** One statement: stores a line (created now). False when its id or name is taken. */
  insert(line: NewLine): Promise<LineRow | undefined>;
  /** Sets every field but id and managed; moves `updatedAt` on. The row then, undefined when no such line. */
  update(id: string, patch: LinePatch): Promise<LineRow | undefined>;
  /** One statement: no line is the default any more (inside a transaction, before marking one). */
  clearDefault(): Promise<void>;
  /** Lines whose fallback is `id` lose it (the line is deleted). */
  dropFallback(id: string): Promise<void>;
  /** One statement: deletes the line. False when there was none. */
  delete(id: string): Promise<boolean>;
  /** Whether any message or chat is on the line. */
  inUse(id: string): Promise<boolean>;
  /** One statement: writes the environment's line (`ln_default`) as the environment declares it; it is the default unless another line is. */
  putEnvLine(line: Pick<LineRow, "network" | "address" | "settings">): Promise<void>;
  /** Every stored secret: the lines' credentials (for sealing and rotation). */
  credentials(): Promise<{ id: string; credentials: string }[]>;
  /** Replaces one line's stored credentials without touching anything else (sealing, rotation). */
  setCredentials(id: string, credentials: string): Promise<void>;
  /** What a BlueBubbles server said of the phone's iMessage, within `maxAgeMs`; undefined when not known. */
  imessage(phone: string, maxAgeMs: number): Promise<boolean | undefined>;
  /** One statement (upsert): remembers the answer, now. */
  rememberImessage(phone: string, available: boolean): Promise<void>;
  /** Moves a stored message to another line and its network (a send rerouted through the fallback). */
  moveMessage(messageId: string, lineId: string, network: string): Promise<void>;
  /** Moves the direct chat of a message to another line with it (nothing for a group's message). */
  moveDirectChat(messageId: string, lineId: string): Promise<void>;
}

const COLUMNS = `id, name, network, address, enabled, is_default AS "isDefault", fallback, settings, credentials, managed, created_at AS "createdAt", updated_at AS "updatedAt"`;
type Stored = Omit<LineRow, "enabled" | "isDefault"> & { enabled: boolean | number; isDefault: boolean | number };
const line = (row: Stored): LineRow => ({ ...row, enabled: Boolean(row.enabled), isDefault: Boolean(row.isDefault) });

const list = sql<Stored>("lines.list", `SELECT ${COLUMNS} FROM lines ORDER BY created_at, id`);
const versions = sql<LineVersion>("lines.versions", `SELECT id, updated_at AS "updatedAt" FROM lines ORDER BY id`);
const insert = sql<Stored>("lines.insert", `INSERT INTO lines (id, name, network, address, enabled, is_default, fallback, settings, credentials, managed, created_at, updated_at)
   VALUES ($id, $name, $network, $address, $enabled::boolean, $isDefault::boolean, $fallback, $settings, $credentials, $managed, {now_ms}, {now_ms})
   ON CONFLICT DO NOTHING RETURNING ${COLUMNS}`);
// updated_at always moves on (at least 1 ms): it is what other processes watch.
const update = sql<Stored>("lines.update", `UPDATE lines SET name = $name, network = $network, address = $address, enabled = $enabled::boolean,
   is_default = $isDefault::boolean, fallback = $fallback, settings = $settings, credentials = $credentials,
   updated_at = CASE WHEN {now_ms} > updated_at THEN {now_ms} ELSE updated_at + 1 END
   WHERE id = $id RETURNING ${COLUMNS}`);
const clearDefault = sql("lines.clearDefault", `UPDATE lines SET is_default = false, updated_at = CASE WHEN {now_ms} > updated_at THEN {now_ms} ELSE updated_at + 1 END WHERE is_default`);
const dropFallback = sql("lines.dropFallback", `UPDATE lines SET fallback = NULL, updated_at = CASE WHEN {now_ms} > updated_at THEN {now_ms} ELSE updated_at + 1 END WHERE fallback = $id`);
const remove = sql("lines.delete", `DELETE FROM lines WHERE id = $id`);
const inUse = sql<{ used: number }>("lines.inUse", `SELECT 1 AS used WHERE EXISTS (SELECT 1 FROM messages WHERE line_id = $id) OR EXISTS (SELECT 1 FROM chats WHERE line_id = $id AND kind = 'group')`);
// The environment's line is the default only when no other line took the mark; its settings change with the environment.
const putEnvLine = sql("lines.putEnvLine", `INSERT INTO lines (id, name, network, address, enabled, is_default, fallback, settings, credentials, managed, created_at, updated_at)
   VALUES ('ln_default', 'default', $network, $address, true, NOT EXISTS (SELECT 1 FROM lines WHERE is_default), NULL, $settings, NULL, 'env', {now_ms}, {now_ms})
   ON CONFLICT (id) DO UPDATE SET network = excluded.network, address = excluded.address, settings = excluded.settings, enabled = true,
     updated_at = CASE WHEN lines.network = excluded.network AND lines.address IS NOT DISTINCT FROM excluded.address AND lines.settings = excluded.settings AND lines.enabled
       THEN lines.updated_at WHEN {now_ms} > lines.updated_at THEN {now_ms} ELSE lines.updated_at + 1 END`);
const credentials = sql<{ id: string; credentials: string }>("lines.credentials", `SELECT id, credentials FROM lines WHERE credentials IS NOT NULL ORDER BY id`);
const setCredentials = sql("lines.setCredentials", `UPDATE lines SET credentials = $credentials WHERE id = $id`);
const imessage = sql<{ available: boolean | number }>("lines.imessage", `SELECT available FROM imessage_availability WHERE phone = $phone AND checked_at > {now_ms} - $maxAgeMs::bigint`);
const rememberImessage = sql("lines.rememberImessage", `INSERT INTO imessage_availability (phone, available, checked_at) VALUES ($phone, $available::boolean, {now_ms})
   ON CONFLICT (phone) DO UPDATE SET available = excluded.available, checked_at = excluded.checked_at`);
const moveMessage = sql("lines.moveMessage", `UPDATE messages SET line_id = $lineId, network = $network WHERE id = $messageId`);
const moveDirectChat = sql("lines.moveDirectChat", `UPDATE chats SET line_id = $lineId WHERE id = (SELECT 'dm_' || substr(phone, 2) FROM messages WHERE id = $messageId AND chat_id IS NULL)`);

export const lines = declare<LineRepository>()({
  list: all(list, () => ({}), (rows) => rows.map(line)),
  versions: all(versions, () => ({})),
  insert: get(insert, (l) => ({ ...l }), (row) => row && line(row)),
  update: get(update, (id, patch) => ({ ...patch, id }), (row) => row && line(row)),
  clearDefault: run(clearDefault, () => ({})),
  dropFallback: run(dropFallback, (id) => ({ id })),
  delete: run(remove, (id) => ({ id }), changed),
  inUse: get(inUse, (id) => ({ id }), (row) => row !== undefined),
  putEnvLine: run(putEnvLine, (l) => ({ network: l.network, address: l.address, settings: l.settings })),
  credentials: all(credentials, () => ({})),
  setCredentials: run(setCredentials, (id, credentials) => ({ id, credentials })),
  imessage: get(imessage, (phone, maxAgeMs) => ({ phone, maxAgeMs }), (row) => (row === undefined ? undefined : Boolean(row.available))),
  rememberImessage: run(rememberImessage, (phone, available) => ({ phone, available })),
  moveMessage: run(moveMessage, (messageId, lineId, network) => ({ messageId, lineId, network })),
  moveDirectChat: run(moveDirectChat, (messageId, lineId) => ({ messageId, lineId })),
});
