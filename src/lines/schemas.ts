import { z } from "zod";
import { isE164 } from "../messages/phone";
import { androidCredentialsSchema, androidSettingsSchema } from "../network/android";
import { typeError } from "../messages/schemas";
import { CAPABILITIES, type Capability } from "../vocabulary/network";
import { LINE_MANAGERS, LINE_NAME, LINE_NETWORKS, type LineNetwork } from "../vocabulary/lines";

const timeout = z.number(typeError("a whole number of milliseconds")).int({ error: "must be a whole number" }).min(1000, { error: "must be at least 1000" }).max(3_600_000, { error: "must be at most 3600000" });
const url = z.url({ protocol: /^https?$/, error: "must be an http or https URL" });
const secret = z.string(typeError("a string")).min(1, { error: "must not be empty" });

/**
 * Each network's settings (non-secret, returned by the API) and credentials (write-only),
 * strict: an unknown field is refused by name. Android's are SMS Gateway for Android's (docs/networks.md).
 */
export const NETWORK_FIELDS = {
  loopback: { settings: z.strictObject({}), credentials: z.strictObject({}) },
  twilio: {
    settings: z.strictObject({
      account_sid: z.string(typeError("a string")).regex(/^AC[0-9a-fA-F]{32}$/, "must be AC followed by 32 hex digits"),
      api_url: url.optional(),
      send_timeout_ms: timeout.optional(),
    }),
    credentials: z.strictObject({ auth_token: secret }),
  },
  bluebubbles: {
    settings: z.strictObject({
      url,
      service: z.enum(["iMessage", "SMS"], { error: "must be iMessage or SMS" }).optional(),
      send_timeout_ms: timeout.optional(),
    }),
    credentials: z.strictObject({
      password: secret,
      webhook_secret: z.string(typeError("a string")).regex(/^[A-Za-z0-9_-]{24,}$/, "must be at least 24 letters, digits, '_' or '-'"),
    }),
  },
  // SMS Gateway for Android (src/network/android.ts): `device_id` required on the cloud or a private server.
  android: { settings: androidSettingsSchema, credentials: androidCredentialsSchema },
} as const satisfies Record<LineNetwork, { settings: z.ZodType; credentials: z.ZodType }>;

export type LineSettings = Record<string, unknown>;
export type LineCredentials = Record<string, string>;

const nameSchema = z.string(typeError("a string")).regex(LINE_NAME, "must be 1 to 40 lowercase letters, digits or '-'").meta({ example: "support" });
const addressSchema = z
  .string(typeError("a string"))
  .trim()
  .min(1, { error: "must not be empty" })
  .max(320, { error: "must be at most 320 characters" })
  .meta({ description: "Our number on this line (E.164), or the iMessage account's handle (a number or an email).", example: "+14155550100" });
const fieldsSchema = z.record(z.string(), z.unknown(), typeError("an object"));

export const createLineInput = z.strictObject({
  name: nameSchema,
  network: z.enum(LINE_NETWORKS, { error: `must be one of ${LINE_NETWORKS.join(", ")}` }),
  address: addressSchema.nullable().optional(),
  settings: fieldsSchema.optional().meta({ description: "The network's settings (docs/lines.md): Twilio `account_sid`; BlueBubbles `url`; Android `url`, `username`." }),
  credentials: fieldsSchema.optional().meta({ description: "The network's secrets, write-only: Twilio `auth_token`; BlueBubbles `password`, `webhook_secret`; Android `password`, `signing_key`." }),
  enabled: z.boolean(typeError("true or false")).optional(),
  default: z.boolean(typeError("true or false")).optional().meta({ description: "Makes it the default line, taking the mark from the one that had it." }),
  fallback: z.string(typeError("a string")).nullable().optional().meta({ description: "The line (id or name) a send goes through when this one cannot reach the contact (docs/lines.md)." }),
});
export type CreateLineInput = z.infer<typeof createLineInput>;

/** Every field optional; `settings` given replaces them, `credentials` given replace them (a field left out keeps its stored value). */
export const updateLineInput = createLineInput.partial().omit({ network: true });
export type UpdateLineInput = z.infer<typeof updateLineInput>;

/** `:id`: the line's id or name. A new schema each use (trpc-to-openapi changes schemas in place). */
export const lineRef = () => z.object({ id: z.string(typeError("a string")).min(1, { error: "must not be empty" }).meta({ description: "The line's id (`ln_…`) or name." }) });

const capabilitiesRecord = z.object(Object.fromEntries(CAPABILITIES.map((c) => [c, z.boolean()])) as Record<Capability, z.ZodBoolean>);

export const lineRecord = z
  .object({
    id: z.string().meta({ example: "ln_0b5e4f7c2d1a49e8" }),
    name: z.string().meta({ example: "support" }),
    network: z.enum(LINE_NETWORKS),
    address: z.string().nullable(),
    enabled: z.boolean(),
    default: z.boolean().meta({ description: "The line a send to a new contact takes (docs/lines.md, routing)." }),
    fallback: z.string().nullable().meta({ description: "The id of the line a send goes through when this one cannot reach the contact." }),
    capabilities: capabilitiesRecord,
    settings: z.record(z.string(), z.unknown()).optional().meta({ description: "The network's non-secret settings; shown to keys with lines:manage only. Credentials are never returned." }),
    webhook_url: z.string().nullable().optional().meta({ description: "Where the network must post (PUBLIC_URL + /webhooks/lines/{id}); null without PUBLIC_URL; shown to keys with lines:manage only." }),
    managed: z.enum(LINE_MANAGERS).meta({ description: "`env`: the line NETWORK declares, changed only through the environment; `api`: added through the API." }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: "Line" });
export type LineRecord = z.infer<typeof lineRecord>;

/** A line as list_lines (MCP) and keys limited to reading show it: without settings. */
export const lineSummary = lineRecord.omit({ settings: true, webhook_url: true }).meta({ id: "LineSummary" });

export const lineOutput = z.object({ success: z.boolean(), line: lineRecord });
export const linesOutput = z.object({ success: z.boolean(), lines: z.array(lineRecord) });
export const lineTestOutput = z.object({
  success: z.boolean(),
  ok: z.boolean().meta({ description: "Whether the network accepted the line's settings and credentials." }),
  detail: z.string().meta({ description: "What the network answered, or what failed." }),
});


/** Whether an address is a phone number (as Twilio's and Android's must be). */
export const isPhoneAddress = (address: string) => isE164(address);
