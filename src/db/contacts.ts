import { all, changed, declare, get, run, sql } from "./sql";

/** A contact's opt-out state. No row: never opted out. */
export interface ContactRow {
  phone: string;
  optedOut: boolean;
  /** Null when it is not opted out. */
  optedOutAt: number | null;
}

/** What a send to a phone reads first. `lineId`: the line of the last message exchanged with it, undefined when none. */
export interface BeforeSend {
  optedOut: boolean;
  ourTyping: boolean;
  lineId?: string;
}

/** One row a phone, made by its first message (which counts them, by trigger) or by an opt-out, whichever comes first. */
export interface ContactRepository {
  get(phone: string): Promise<ContactRow | undefined>;
  /** What a send checks first, in one read: whether the contact opted out, whether our typing indicator is on, and the line of its last message (its direct chat's). */
  beforeSend(phone: string): Promise<BeforeSend>;

  /** One statement (upsert): opts out (`optedOutAt` now, or kept when already out) or back in (null). Returns the row. */
  setOptedOut(phone: string, optedOut: boolean): Promise<ContactRow>;
  /** One statement (upsert): the contact is typing for `forMs` from now, or not (null). */
  setTyping(phone: string, forMs: number | null): Promise<void>;
  /** Whether the contact is typing now (a report less than its time ago). */
  typing(phone: string): Promise<boolean>;
  /** One statement (upsert): our typing indicator to the contact is on for `forMs` from now. */
  startOurTyping(phone: string, forMs: number): Promise<void>;
  /** One statement: our indicator is off (`expiredOnly`: only when its time is up). False when it was not on (or not expired). */
  stopOurTyping(phone: string, expiredOnly: boolean): Promise<boolean>;
  /** The contacts whose indicator of ours is on past its time (contacts_our_typing_idx), at most `limit`. */
  ourTypingExpired(limit: number): Promise<string[]>;
}

const ROW = `phone, opted_out AS "optedOut", opted_out_at AS "optedOutAt"`;
type Stored = Omit<ContactRow, "optedOut"> & { optedOut: boolean | number };
const contact = (row: Stored | undefined) => row && { ...row, optedOut: Boolean(row.optedOut) };

const byPhone = sql<Stored>("contacts.get", `SELECT ${ROW} FROM contacts WHERE phone = $phone`);
const beforeSend = sql<Record<"optedOut" | "ourTyping", boolean | number> & { lineId: string | null }>("contacts.beforeSend",
  // The direct chat by its primary key (a scalar subquery on the parameter: SQLite's join on the expression found it far slower).
  `SELECT opted_out AS "optedOut", our_typing_until IS NOT NULL AS "ourTyping", (SELECT line_id FROM chats WHERE id = 'dm_' || substr($phone::text, 2)) AS "lineId"
   FROM contacts WHERE phone = $phone`);
// A contact without messages yet gets a row counting none; a second opt-out keeps the first one's time.
const setOptedOut = sql<Stored>(
  "contacts.setOptedOut",
  `INSERT INTO contacts (phone, messages, opted_out, opted_out_at) VALUES ($phone, 0, $optedOut::boolean, CASE WHEN $optedOut::boolean THEN {now_ms} END)
   ON CONFLICT (phone) DO UPDATE SET opted_out = excluded.opted_out,
     opted_out_at = CASE WHEN contacts.opted_out AND excluded.opted_out THEN contacts.opted_out_at ELSE excluded.opted_out_at END
   RETURNING ${ROW}`,
);

const setTyping = sql("contacts.setTyping", `INSERT INTO contacts (phone, messages, typing_until) VALUES ($phone, 0, {now_ms} + $forMs::bigint)
   ON CONFLICT (phone) DO UPDATE SET typing_until = excluded.typing_until`);
const typing = sql<{ typing: boolean | number }>("contacts.typing", `SELECT typing_until > {now_ms} AS typing FROM contacts WHERE phone = $phone`);
const startOurTyping = sql("contacts.startOurTyping", `INSERT INTO contacts (phone, messages, our_typing_until) VALUES ($phone, 0, {now_ms} + $forMs::bigint)
   ON CONFLICT (phone) DO UPDATE SET our_typing_until = excluded.our_typing_until`);
const stopOurTyping = sql("contacts.stopOurTyping", `UPDATE contacts SET our_typing_until = NULL
   WHERE phone = $phone AND our_typing_until IS NOT NULL AND (NOT $expiredOnly::boolean OR our_typing_until <= {now_ms})`);
const ourTypingExpired = sql<{ phone: string }>("contacts.ourTypingExpired", `SELECT phone FROM contacts WHERE our_typing_until <= {now_ms} ORDER BY our_typing_until LIMIT $limit`);

export const contacts = declare<ContactRepository>()({
  get: get(byPhone, (phone) => ({ phone }), contact),
  beforeSend: get(beforeSend, (phone) => ({ phone }), (row) => ({ optedOut: Boolean(row?.optedOut), ourTyping: Boolean(row?.ourTyping), ...(row?.lineId ? { lineId: row.lineId } : {}) })),
  setOptedOut: get(setOptedOut, (phone, optedOut) => ({ phone, optedOut }), (row) => contact(row)!),
  setTyping: run(setTyping, (phone, forMs) => ({ phone, forMs })),
  typing: get(typing, (phone) => ({ phone }), (row) => Boolean(row?.typing)),
  startOurTyping: run(startOurTyping, (phone, forMs) => ({ phone, forMs })),
  stopOurTyping: run(stopOurTyping, (phone, expiredOnly) => ({ phone, expiredOnly }), changed),
  ourTypingExpired: all(ourTypingExpired, (limit) => ({ limit }), (rows) => rows.map((r) => r.phone)),
});
