// The cursor guarantee under load (docs/api.md GET /api/messages/poll): a client that
// passes the last timestamp it got as the next `since` sees every inbound message
// exactly once, however many writers are storing messages meanwhile.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { expectEachOnce, followPoll, inbound, newPhone } from "./api";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const WRITERS = 20;
const PER_WRITER = 25;
const TOTAL = WRITERS * PER_WRITER;

let server: Server;
beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(() => server?.kill());

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
      followPoll(server, {}, TOTAL, writing),
      followPoll(server, { limit: 7 }, TOTAL, writing),
      followPoll(server, { phone: phones[0]! }, PER_WRITER, writing),
      ...writers,
    ]);

    const everything = written.flat();
    expect(everything).toHaveLength(TOTAL);
    expect(new Set(everything).size).toBe(TOTAL);

    expectEachOnce("unfiltered", all, everything);
    expectEachOnce("limit=7", paged, everything);
    expectEachOnce("one phone", one, written[0]!);
    // Each writer's messages arrive in the order that writer stored them.
    const position = new Map(all.seen.map((id, i) => [id, i]));
    for (const ids of written) {
      const at = ids.map((id) => position.get(id)!);
      expect(at).toEqual([...at].sort((a, b) => a - b));
    }
  },
  90_000,
);
