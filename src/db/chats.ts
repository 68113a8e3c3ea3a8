import type { ChatKind } from "../vocabulary/chats";
import type { ChatMode } from "../vocabulary/chat-modes";
import { DEFAULT_LINE_ID } from "../vocabulary/lines";
import { unreadOf } from "./messages";
import { all, changed, choose, declare, get, run, sql } from "./sql";

export interface ChatRow {
  id: string;
  kind: ChatKind;
  name: string | null;
  /** E.164 numbers, without us. */
  participants: string[];
  /** A group's network and that network's id of it; null for direct chats. */
  network: string | null;
  networkId: string | null;
  /** µs. */
  createdAt: number;
  /** µs; null until its first message. */
  lastMessageAt: number | null;
  messages: number;
  /** Someone's STOP in it mutes automated sends to it (`chat_mutes`). */
  muted: boolean;
  /** A group's: our typing indicator in it is on (expired or not, until the sweep or a send clears it). */
  ourTyping: boolean;
  /** A group's line; a direct chat's: its last message's. */
  lineId: string;
  /** Who answers in it (DEFAULT_CHAT_MODE unless set). */
  mode: ChatMode;
  /** A `human` chat's mode to return to; null otherwise. */
  previousMode: ChatMode | null;
  /** ms: when a `human` chat returns to `previousMode`; null: it stays until set by hand. */
  humanUntil: number | null;
}

/** A chat as the API shows it: with its inbound messages not read (a direct chat's: its contact's), counted only for this. */
export type ChatView = ChatRow & { unread: number };

/** `lineId` left out: the environment's line. */
export type NewChat = Pick<ChatRow, "id" | "kind" | "name" | "participants" | "network" | "networkId"> & { lineId?: string };

/** A chat's mode set: `mode`, and for `human`, the mode to return to (null: the default) and after how long (null: never by itself). */
export interface ModeChange {
  mode: ChatMode;
  modeBefore: ChatMode | null;
  humanForMs: number | null;
}

/** A group whose indicator of ours is past its time: what the sweep needs to stop it on the network. */
export interface ExpiredTyping {
  id: string;
  networkId: string;
  lineId: string;
}

/**
 * Chats: a direct chat is made by its contact's first message, a group chat by `create`;
 * `messages` and `lastMessageAt` are kept by triggers on `messages` (see the migrations).
 */
export interface ChatRepository {
  get(id: string): Promise<ChatRow | undefined>;
  /** The chat as the API shows it, with its unread count. */
  view(id: string): Promise<ChatView | undefined>;
  /** A group by the network's id of it. */
  byNetworkId(network: string, networkId: string): Promise<ChatRow | undefined>;
  /** Latest activity first (a chat without messages by its creation), of `kind` when given, and how many in all, from one statement. */
  list(kind: ChatKind | undefined, limit: number, offset: number): Promise<{ rows: ChatView[]; total: number }>;
  /** One statement: stores a group (created now); with its network id already stored, nothing (undefined). */
  create(chat: NewChat): Promise<ChatRow | undefined>;
  /** The row locked until the end of the transaction (PostgreSQL; SQLite's write transaction holds every row). */
  lockForUpdate(id: string): Promise<ChatRow | undefined>;
  /** Sets the name and participants. The row as it is then, undefined when no such chat. */
  update(id: string, patch: { name: string | null; participants: readonly string[] }): Promise<ChatRow | undefined>;
  /** Records the network's id of a group created on it, and the participants it reports. */
  setNetwork(id: string, networkId: string, participants: readonly string[]): Promise<void>;
  /** One statement: `phone` mutes the chat (a STOP there). False when it already did. */
  mute(chatId: string, phone: string): Promise<boolean>;
  /** One statement: `phone` no longer mutes it (a START there). False when it did not. */
  unmute(chatId: string, phone: string): Promise<boolean>;
  /** Whether anyone mutes the chat. */
  muted(chatId: string): Promise<boolean>;
  /** The chat's mode: its own, else the default (also for a direct chat not made yet). */
  modeOf(id: string): Promise<ChatMode>;
  /** The modes of these chats (those that exist), in one query. */
  modes(ids: readonly string[]): Promise<Map<string, ChatMode>>;
  /** The row as stored: its own mode (null: the default) and the one a human chat returns to (src/messages/modes.ts decides). */
  storedMode(id: string): Promise<{ mode: ChatMode | null; modeBefore: ChatMode | null } | undefined>;
  /** Sets the mode; the row as it is then, undefined when no such chat. */
  setMode(id: string, change: ModeChange): Promise<ChatRow | undefined>;
  /** One statement: a chat set `human` stays so `forMs` from now (a person's send restarts the time). False when it is not. */
  extendHuman(id: string, forMs: number): Promise<boolean>;
  /** One statement: the human chats whose time is up (chats_human_until_idx), at most `limit`, back in their previous mode; each returned by one caller only. */
  returnExpiredHuman(limit: number): Promise<ChatRow[]>;
  /** Writes DEFAULT_CHAT_MODE for every process's reads (each start writes its own). */
  setDefaultMode(mode: ChatMode): Promise<void>;
  /** One statement: our typing indicator in the group is on for `forMs` from now. */
  startOurTyping(id: string, forMs: number): Promise<void>;
  /** One statement: our indicator in the group is off (`expiredOnly`: only when its time is up). False when it was not on (or not expired). */
  stopOurTyping(id: string, expiredOnly: boolean): Promise<boolean>;
  /** The groups whose indicator of ours is on past its time (chats_our_typing_idx), at most `limit`. */
  ourTypingExpired(limit: number): Promise<ExpiredTyping[]>;
}

/** A group's by messages_chat_unread_idx; a direct chat's are its contact's, whose number its id holds (src/vocabulary/chats.ts directChatId). */
const UNREAD = `CASE WHEN kind = 'group'
  THEN (SELECT count(*) FROM messages u WHERE u.chat_id = chats.id AND u.direction = 'inbound' AND u.read_at IS NULL)
  ELSE ${unreadOf("('+' || substr(chats.id, 4))")} END`;
/** DEFAULT_CHAT_MODE as the last start wrote it (setDefaultMode), `auto` before any did. */
const DEFAULT_MODE = `coalesce((SELECT value FROM network_state WHERE network = 'textwire' AND key = 'default_chat_mode'), 'auto')`;
const ROW = `id, kind, name, participants, network, network_id AS "networkId", created_at AS "createdAt", last_message_at AS "lastMessageAt", messages,
  EXISTS (SELECT 1 FROM chat_mutes m WHERE m.chat_id = chats.id) AS muted, our_typing_until IS NOT NULL AS "ourTyping", line_id AS "lineId",
  coalesce(mode, ${DEFAULT_MODE}) AS mode, CASE WHEN mode = 'human' THEN coalesce(mode_before, ${DEFAULT_MODE}) END AS "previousMode", human_until AS "humanUntil"`;
/** ROW and the unread count: only where the API answers with the chat, never on a message's way in or out (the count grows with a group nobody reads). */
const VIEW = `${ROW}, ${UNREAD} AS unread`;
type Stored = Omit<ChatRow, "participants" | "muted" | "ourTyping" | "humanUntil"> & { participants: string[] | string; muted: boolean | number; ourTyping: boolean | number; humanUntil: number | string | null };
type StoredView = Stored & { unread: number | string };
/** SQLite keeps the list as JSON text, PostgreSQL as a text[]; SQLite's booleans are 0 or 1. */
export const chatRow = (row: Stored | undefined): ChatRow | undefined =>
  row && {
    ...row,
    participants: typeof row.participants === "string" ? JSON.parse(row.participants) : row.participants,
    messages: Number(row.messages),
    muted: Boolean(row.muted),
    ourTyping: Boolean(row.ourTyping),
    humanUntil: row.humanUntil === null ? null : Number(row.humanUntil),
  };
const chatView = ({ unread, ...row }: StoredView): ChatView => ({ ...chatRow(row)!, unread: Number(unread) });

const byId = sql<Stored>("chats.get", `SELECT ${ROW} FROM chats WHERE id = $id`);
const viewById = sql<StoredView>("chats.view", `SELECT ${VIEW} FROM chats WHERE id = $id`);
const byNetworkId = sql<Stored>("chats.byNetworkId", `SELECT ${ROW} FROM chats WHERE network = $network AND network_id = $networkId`);
const lock = sql<Stored>("chats.lockForUpdate", `SELECT ${ROW} FROM chats WHERE id = $id {for_update}`);
// The total rides on every row of the page, and on a row of nulls when the page is empty. The
// page's ids are picked first, so the view's counts are made for its rows only; of one kind, in
// the order of chats_kind_activity_idx (its expression written as the index has it).
const listOf = (name: string, where: string) =>
  sql<StoredView & { total: number }>(name, `SELECT t.total, c.* FROM (SELECT count(*) AS total FROM chats ${where}) t
   LEFT JOIN (SELECT ${VIEW}, p.active FROM (SELECT id AS page_id, coalesce(last_message_at, created_at) AS active FROM chats ${where}
     ORDER BY coalesce(last_message_at, created_at) DESC, id DESC LIMIT $limit OFFSET $offset) p JOIN chats ON chats.id = p.page_id) c ON true
   ORDER BY c.active DESC, c.id DESC`);
const listAll = listOf("chats.list", "");
const listKind = listOf("chats.listKind", "WHERE kind = $kind");
const create = sql<Stored>("chats.create", `INSERT INTO chats (id, kind, name, participants, network, network_id, created_at, messages, line_id)
   VALUES ($id, $kind, $name, $participants::text[], $network, $networkId, {now_us}, 0, $lineId)
   ON CONFLICT (network, network_id) DO NOTHING RETURNING ${ROW}`);
const update = sql<Stored>("chats.update", `UPDATE chats SET name = $name, participants = $participants::text[] WHERE id = $id RETURNING ${ROW}`);
const setNetwork = sql("chats.setNetwork", `UPDATE chats SET network_id = $networkId, participants = $participants::text[] WHERE id = $id`);
const mute = sql("chats.mute", `INSERT INTO chat_mutes (chat_id, phone, created_at) VALUES ($chatId, $phone, {now_ms}) ON CONFLICT (chat_id, phone) DO NOTHING`);
const unmute = sql("chats.unmute", `DELETE FROM chat_mutes WHERE chat_id = $chatId AND phone = $phone`);
const muted = sql<{ muted: number }>("chats.muted", `SELECT 1 AS muted FROM chat_mutes WHERE chat_id = $chatId LIMIT 1`);
const startOurTyping = sql("chats.startOurTyping", `UPDATE chats SET our_typing_until = {now_ms} + $forMs::bigint WHERE id = $id`);
const stopOurTyping = sql("chats.stopOurTyping", `UPDATE chats SET our_typing_until = NULL
   WHERE id = $id AND our_typing_until IS NOT NULL AND (NOT $expiredOnly::boolean OR our_typing_until <= {now_ms})`);
const modeOf = sql<{ mode: ChatMode }>("chats.modeOf", `SELECT coalesce((SELECT mode FROM chats WHERE id = $id), ${DEFAULT_MODE}) AS mode`);
const modes = sql<{ id: string; mode: ChatMode }>("chats.modes", `SELECT id, coalesce(mode, ${DEFAULT_MODE}) AS mode FROM chats WHERE id = ANY($ids::text[])`);
const storedMode = sql<{ mode: ChatMode | null; modeBefore: ChatMode | null }>("chats.storedMode", `SELECT mode, mode_before AS "modeBefore" FROM chats WHERE id = $id`);
const setMode = sql<Stored>("chats.setMode", `UPDATE chats SET mode = $mode, mode_before = $modeBefore,
   human_until = CASE WHEN $forMs::bigint IS NULL THEN NULL ELSE {now_ms} + $forMs::bigint END WHERE id = $id RETURNING ${ROW}`);
const extendHuman = sql("chats.extendHuman", `UPDATE chats SET human_until = {now_ms} + $forMs::bigint WHERE id = $id AND mode = 'human'`);
const returnExpiredHuman = sql<Stored>("chats.returnExpiredHuman", `UPDATE chats SET mode = mode_before, mode_before = NULL, human_until = NULL
   WHERE id IN (SELECT id FROM chats WHERE human_until <= {now_ms} ORDER BY human_until LIMIT $limit) AND human_until <= {now_ms} RETURNING ${ROW}`);
const setDefaultMode = sql("chats.setDefaultMode", `INSERT INTO network_state (network, key, value) VALUES ('textwire', 'default_chat_mode', $mode)
   ON CONFLICT (network, key) DO UPDATE SET value = excluded.value`);
const ourTypingExpired = sql<ExpiredTyping>("chats.ourTypingExpired",
  `SELECT id, network_id AS "networkId", line_id AS "lineId" FROM chats WHERE our_typing_until <= {now_ms} ORDER BY our_typing_until LIMIT $limit`);

export const chats = declare<ChatRepository>()({
  get: get(byId, (id) => ({ id }), chatRow),
  view: get(viewById, (id) => ({ id }), (row) => row && chatView(row)),
  byNetworkId: get(byNetworkId, (network, networkId) => ({ network, networkId }), chatRow),
  list: all(choose([listAll, listKind], (kind: ChatKind | undefined) => (kind ? listKind : listAll)), (kind, limit, offset) => ({ ...(kind ? { kind } : {}), limit, offset }), (rows) => ({
    rows: rows[0]?.id == null ? [] : rows.map(({ total: _, active: __, ...r }: StoredView & { total: number; active?: number }) => chatView(r)),
    total: Number(rows[0]?.total ?? 0),
  })),
  create: get(create, (chat) => ({ ...chat, lineId: chat.lineId ?? DEFAULT_LINE_ID }), chatRow),
  lockForUpdate: get(lock, (id) => ({ id }), chatRow),
  update: get(update, (id, patch) => ({ id, name: patch.name, participants: patch.participants }), chatRow),
  setNetwork: run(setNetwork, (id, networkId, participants) => ({ id, networkId, participants })),
  mute: run(mute, (chatId, phone) => ({ chatId, phone }), changed),
  unmute: run(unmute, (chatId, phone) => ({ chatId, phone }), changed),
  muted: get(muted, (chatId) => ({ chatId }), (row) => row !== undefined),
  modeOf: get(modeOf, (id) => ({ id }), (row) => row!.mode),
  modes: all(modes, (ids) => ({ ids }), (rows) => new Map(rows.map((r) => [r.id, r.mode]))),
  storedMode: get(storedMode, (id) => ({ id })),
  setMode: get(setMode, (id, change) => ({ id, mode: change.mode, modeBefore: change.modeBefore, forMs: change.humanForMs }), chatRow),
  extendHuman: run(extendHuman, (id, forMs) => ({ id, forMs }), changed),
  returnExpiredHuman: all(returnExpiredHuman, (limit) => ({ limit }), (rows) => rows.map((r) => chatRow(r)!)),
  setDefaultMode: run(setDefaultMode, (mode) => ({ mode })),
  startOurTyping: run(startOurTyping, (id, forMs) => ({ id, forMs })),
  stopOurTyping: run(stopOurTyping, (id, expiredOnly) => ({ id, expiredOnly }), changed),
  ourTypingExpired: all(ourTypingExpired, (limit) => ({ limit })),
});
