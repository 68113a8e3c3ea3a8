// The cursor guarantee under load (docs/api.md GET /api/messages/poll): a client that
// passes the last timestamp it got as the next `since` sees every inbound message
// exactly once, however many writers are storing messages meanwhile.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { expectStrictlyIncreasing, inbound, newPhone, poll } from "./api";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const WRITERS = 20;
const PER_WRITER = 25;
const TOTAL = WRITERS * PER_WRITER;
const DEADLINE_MS = 40_000;
const MAX_POLLS = 20_000;

let server: Server;
beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(() => server?.kill());

interface Follower {
  seen: string[];
  stamps: string[];
  polls: number;
}

/** Polls, following `since`, until it has `expected` messages and nothing more is coming. */
async function follow(params: { phone?: string; limit?: number }, expected: number, writing: () => boolean): Promise<Follower> {
  const f: Follower = { seen: [], stamps: [], polls: 0 };
  const deadline = Date.now() + DEADLINE_MS;
  let since: string | undefined;
  while (f.polls < MAX_POLLS && Date.now() < deadline) {
    const stillWriting = writing();
    const res = await poll(server, { ...params, ...(since ? { since } : {}) });
    f.polls++;
    for (const m of res.messages) {
      f.seen.push(m.id);
      f.stamps.push(m.timestamp);
    }
    since = res.messages.at(-1)?.timestamp ?? since;
    // Done only once a poll that began after the last write came back with nothing more.
    if (!stillWriting && !res.has_more && f.seen.length >= expected) return f;
    if (res.messages.length === 0) await Bun.sleep(5);
  }
  return f;
}

test(
  `${WRITERS} concurrent webhook writers × ${PER_WRITER} messages: three followers each see every message exactly once`,
  async () => {
    const phones = Array.from({ length: WRITERS }, () => newPhone());
    const written: string[][] = phones.map(() => []);
    let writersLeft = WRITERS;
    const writers = phones.map(async (phone, w) => {
      try {
        for (let i = 0; i < PER_WRITER; i++) written[w]!.push((await inbound(server, phone, `w${w} m${i}`)).message_id);
      } finally {
        writersLeft--;
      }
    });
    const writing = () => writersLeft > 0;
    const [all, paged, one] = await Promise.all([
      follow({}, TOTAL, writing),
      follow({ limit: 7 }, TOTAL, writing),
      follow({ phone: phones[0]! }, PER_WRITER, writing),
      ...writers,
    ]);

    const everything = written.flat();
    expect(everything).toHaveLength(TOTAL);
    expect(new Set(everything).size).toBe(TOTAL);

    for (const [name, f, want] of [
      ["unfiltered", all, everything],
      ["limit=7", paged, everything],
      ["one phone", one, written[0]!],
    ] as const) {
      const duplicates = f.seen.length - new Set(f.seen).size;
      const missed = want.filter((id) => !f.seen.includes(id));
      if (duplicates || missed.length || f.seen.length !== want.length) {
        throw new Error(`${name} follower: ${f.seen.length} seen of ${want.length}, ${duplicates} twice, ${missed.length} missed (after ${f.polls} polls)`);
      }
      expectStrictlyIncreasing(f.stamps);
    }
    // Each writer's messages arrive in the order that writer stored them.
    const position = new Map(all.seen.map((id, i) => [id, i]));
    for (const ids of written) {
      const at = ids.map((id) => position.get(id)!);
      expect(at).toEqual([...at].sort((a, b) => a - b));
    }
  },
  90_000,
);
