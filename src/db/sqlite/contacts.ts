import type { Database } from "bun:sqlite";
import type { ContactRepository, ContactRow } from "../port";
import type { Sync } from "./gate";

const ROW = `phone, opted_out AS optedOut, opted_out_at AS optedOutAt`;

type Stored = Omit<ContactRow, "optedOut"> & { optedOut: number };

const contactRow = (row: Stored) => ({ ...row, optedOut: row.optedOut === 1 });

/** The contacts table's opt-outs (its message counts are kept by triggers, drizzle/sqlite/0005_contacts.sql). `now` counts milliseconds. */
export function sqliteContacts(sqlite: Database, now: () => number): Sync<ContactRepository> {
  const get = sqlite.prepare<Stored, [{ phone: string }]>(`SELECT ${ROW} FROM contacts WHERE phone = $phone`);
  // A contact without messages yet gets a row counting none; a second opt-out keeps the first one's time.
  const set = sqlite.prepare<Stored, [{ phone: string; optedOut: number; at: number | null }]>(
    `INSERT INTO contacts (phone, messages, opted_out, opted_out_at) VALUES ($phone, 0, $optedOut, $at)
     ON CONFLICT (phone) DO UPDATE SET opted_out = excluded.opted_out,
       opted_out_at = CASE WHEN contacts.opted_out AND excluded.opted_out THEN contacts.opted_out_at ELSE excluded.opted_out_at END
     RETURNING ${ROW}`,
  );
  return {
    get(phone) {
      const row = get.get({ phone });
      return row ? contactRow(row) : undefined;
    },
    setOptedOut: (phone, optedOut) => contactRow(set.get({ phone, optedOut: optedOut ? 1 : 0, at: optedOut ? now() : null })!),
  };
}
