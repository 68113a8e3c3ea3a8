import { declare, get, sql } from "./sql";

/** A contact's opt-out state. No row: never opted out. */
export interface ContactRow {
  phone: string;
  optedOut: boolean;
  /** Null when it is not opted out. */
  optedOutAt: number | null;
}

/** One row a phone, made by its first message (which counts them, by trigger) or by an opt-out, whichever comes first. */
export interface ContactRepository {
  get(phone: string): Promise<ContactRow | undefined>;

  /** One statement (upsert): opts out (`optedOutAt` now, or kept when already out) or back in (null). Returns the row. */
  setOptedOut(phone: string, optedOut: boolean): Promise<ContactRow>;
}

const ROW = `phone, opted_out AS "optedOut", opted_out_at AS "optedOutAt"`;
type Stored = Omit<ContactRow, "optedOut"> & { optedOut: boolean | number };
const contact = (row: Stored | undefined) => row && { ...row, optedOut: Boolean(row.optedOut) };

const byPhone = sql<Stored>("contacts.get", `SELECT ${ROW} FROM contacts WHERE phone = $phone`);
// A contact without messages yet gets a row counting none; a second opt-out keeps the first one's time.
const setOptedOut = sql<Stored>(
  "contacts.setOptedOut",
  `INSERT INTO contacts (phone, messages, opted_out, opted_out_at) VALUES ($phone, 0, $optedOut::boolean, CASE WHEN $optedOut::boolean THEN {now_ms} END)
   ON CONFLICT (phone) DO UPDATE SET opted_out = excluded.opted_out,
     opted_out_at = CASE WHEN contacts.opted_out AND excluded.opted_out THEN contacts.opted_out_at ELSE excluded.opted_out_at END
   RETURNING ${ROW}`,
);

export const contacts = declare<ContactRepository>()({
  get: get(byPhone, (phone) => ({ phone }), contact),
  setOptedOut: get(setOptedOut, (phone, optedOut) => ({ phone, optedOut }), (row) => contact(row)!),
});
