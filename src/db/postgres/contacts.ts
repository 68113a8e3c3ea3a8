import type { ContactRepository, ContactRow } from "../port";
import { NOW_MS, statement, type Run } from "./sql";

const ROW = `phone, opted_out AS "optedOut", opted_out_at AS "optedOutAt"`;

const get = statement<ContactRow>("contacts.get", `SELECT ${ROW} FROM contacts WHERE phone = $1`);
// A contact without messages yet gets a row counting none (the count trigger adds to it,
// drizzle/postgres/0001_clock_and_contacts.sql); a second opt-out keeps the first one's time.
const setOptedOut = statement<ContactRow>(
  "contacts.setOptedOut",
  `INSERT INTO contacts (phone, messages, opted_out, opted_out_at) VALUES ($1, 0, $2::boolean, CASE WHEN $2::boolean THEN ${NOW_MS} END)
   ON CONFLICT (phone) DO UPDATE SET opted_out = excluded.opted_out,
     opted_out_at = CASE WHEN contacts.opted_out AND excluded.opted_out THEN contacts.opted_out_at ELSE excluded.opted_out_at END
   RETURNING ${ROW}`,
);

/** The contacts table's opt-outs, timed by the database's clock. */
export function postgresContacts(run: Run): ContactRepository {
  return {
    get: async (phone) => (await run(get, [phone])).rows[0],
    setOptedOut: async (phone, optedOut) => (await run(setOptedOut, [phone, optedOut])).rows[0]!,
  };
}
