import { AppError } from "../errors";
import { ALL_SCOPES, SCOPES, type Reach, type Scope } from "../vocabulary/scopes";

/**
 * A verified key as every surface sees it (REST, tRPC, MCP, the console's session, the
 * remote worker): who it is and what it was given. API_KEYS keys and keys stored before
 * scopes existed hold `*` and no limits.
 */
export interface KeyAuth {
  /** The stored key's id, or `env:N` for the Nth key of API_KEYS. */
  id: string;
  /** `["*"]`: every scope. */
  scopes: readonly (Scope | typeof ALL_SCOPES)[];
  /** The line ids it may read and send through; null: every line. */
  lines: readonly string[] | null;
  reach: Reach;
  /** ms; null: never expires. */
  expiresAt: number | null;
}

/** What an API_KEYS key holds: everything, without limits. */
export const unlimited = (id: string): KeyAuth => ({ id, scopes: [ALL_SCOPES], lines: null, reach: "any", expiresAt: null });

export function hasScope(key: Pick<KeyAuth, "scopes">, scope: Scope): boolean {
  return key.scopes.includes(ALL_SCOPES) || key.scopes.includes(scope);
}

/** Every scope the key holds, `*` spelled out. */
export function scopesOf(key: Pick<KeyAuth, "scopes">): Scope[] {
  return SCOPES.filter((s) => hasScope(key, s));
}

/**
 * The one question every surface asks: may this key do what needs `scope` (or any one of
 * `others`)? A refusal names the first scope it lacks; it is thrown before anything changes.
 */
export function scopeRefusal(key: Pick<KeyAuth, "scopes">, scope: Scope, ...others: Scope[]): AppError | null {
  if ([scope, ...others].some((s) => hasScope(key, s))) return null;
  return new AppError("FORBIDDEN", `scope: this key lacks ${scope}`);
}

export function requireScope(key: Pick<KeyAuth, "scopes">, scope: Scope, ...others: Scope[]): void {
  const refusal = scopeRefusal(key, scope, ...others);
  if (refusal) throw refusal;
}

/**
 * May the key read or send through line `lineId`? Called where a send or a read resolves
 * its line (CONTRACT lines); a key whose `lines` is set may read only those lines, never
 * across every line at once.
 */
export function lineRefusal(key: Pick<KeyAuth, "lines">, lineId: string): AppError | null {
  if (key.lines === null || key.lines.includes(lineId)) return null;
  return new AppError("FORBIDDEN", `line: this key may not use ${lineId}`);
}

/** A read across every line (no line named) by a key limited to some: refused, naming the lines it may use. */
export function allLinesRefusal(key: Pick<KeyAuth, "lines">): AppError | null {
  if (key.lines === null) return null;
  return new AppError("FORBIDDEN", `line: this key may use only ${key.lines.join(", ") || "no line"}; name one`);
}

/** Whether a phone has written to us (any inbound message, direct or in a group). */
export type WroteFirst = (phone: string) => Promise<boolean>;

/**
 * A `reach: "known"` key may text only phones that wrote to us first (sends by chat go into
 * chats that exist, which the send itself checks). Asked where a send, a generate with
 * auto_send, a new chat or a new group participant names its phones.
 */
export async function reachRefusal(key: Pick<KeyAuth, "reach">, phones: readonly string[], wroteFirst: WroteFirst): Promise<AppError | null> {
  if (key.reach === "any") return null;
  for (const phone of phones) {
    if (!(await wroteFirst(phone))) return new AppError("FORBIDDEN", `phone: this key may only write to contacts who wrote first (${phone} has not)`);
  }
  return null;
}

/** The scopes and limits asked for a new key; left out, a limit is the creator's. */
export interface KeyGrant {
  scopes: readonly (Scope | typeof ALL_SCOPES)[];
  lines: readonly string[] | null;
  reach: Reach;
  expiresAt: number | null;
}

/**
 * A key never makes a key wider than itself: every scope its own, every line its own (a
 * creator limited to lines cannot give every line), `known` reach kept, and an expiry no
 * later than its own. The refusal names the first excess.
 */
export function widerRefusal(creator: KeyAuth, grant: KeyGrant): AppError | null {
  const wider = (what: string) => new AppError("FORBIDDEN", `${what}; a key cannot create a key wider than itself`);
  if (grant.scopes.includes(ALL_SCOPES) && !creator.scopes.includes(ALL_SCOPES)) return wider("scopes: this key lacks *");
  for (const scope of grant.scopes) {
    if (scope !== ALL_SCOPES && !hasScope(creator, scope)) return wider(`scopes: this key lacks ${scope}`);
  }
  if (creator.lines !== null) {
    if (grant.lines === null) return wider("lines: this key may not use every line");
    const other = grant.lines.find((line) => !creator.lines!.includes(line));
    if (other !== undefined) return wider(`lines: this key may not use ${other}`);
  }
  if (creator.reach === "known" && grant.reach !== "known") return wider('reach: this key may only reach "known" contacts');
  if (creator.expiresAt !== null && (grant.expiresAt === null || grant.expiresAt > creator.expiresAt)) {
    return wider(`expires_at: this key expires at ${new Date(creator.expiresAt).toISOString()}`);
  }
  return null;
}

/** WroteFirst from the stored messages: any inbound message from the phone, in any chat. */
export function wroteFirstIn(messages: { inboundAfter(since: number, limit: number, phone?: string, every?: boolean): Promise<{ rows: unknown[] }> }): WroteFirst {
  return async (phone) => (await messages.inboundAfter(-1, 1, phone, true)).rows.length > 0;
}

/**
 * Everything a key's write to `phones` must pass besides its input: the scope, then the
 * reach. The procedures that send, generate with auto_send, create a chat or add a group
 * participant ask it before anything is stored; workflows send with no key.
 */
export async function requireWrite(
  key: KeyAuth,
  phones: readonly (string | undefined)[],
  messages: Parameters<typeof wroteFirstIn>[0],
): Promise<void> {
  requireScope(key, "messages:send");
  const named = phones.filter((p): p is string => p !== undefined);
  const refusal = await reachRefusal(key, named, wroteFirstIn(messages));
  if (refusal) throw refusal;
}
