import { z } from "zod";
import type { Repositories } from "../db/port";
import { phoneInPath } from "./schemas";
import { isoTime } from "./time";

export const contactInput = z.object({ phone: phoneInPath() });

export const contactRecord = z
  .object({
    phone: z.string(),
    opted_out: z.boolean().meta({ description: "The contact replied STOP (or another opt-out word) and has not opted back in: sends to it are refused (403)." }),
    opted_out_at: z.string().nullable().meta({ description: "When it opted out (ISO 8601, UTC); null when it is not opted out.", example: "2026-11-21T09:30:00.123000Z" }),
    unread: z.number().int().meta({ description: "Its inbound messages not marked read (POST /api/contacts/{phone}/read)." }),
    typing: z.boolean().meta({ description: "The contact is typing now (the network reported it less than 60 s ago)." }),
  })
  .meta({ id: "Contact" });

export const contactOutput = z.object({ success: z.boolean(), contact: contactRecord });

export type ContactRecord = z.infer<typeof contactRecord>;

/** A contact's opt-out state, unread count and typing; a phone never seen is not opted out. */
export async function getContact(storage: Pick<Repositories, "contacts" | "messages">, phone: string): Promise<ContactRecord> {
  const [row, unread, typing] = await Promise.all([storage.contacts.get(phone), storage.messages.unread(phone), storage.contacts.typing(phone)]);
  return {
    phone,
    opted_out: row?.optedOut ?? false,
    opted_out_at: row?.optedOut && row.optedOutAt !== null ? isoTime(row.optedOutAt * 1000) : null,
    unread,
    typing,
  };
}
