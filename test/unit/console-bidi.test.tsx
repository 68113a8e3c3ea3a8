// The console isolates what others wrote (docs/security.md): a message's text is its own
// direction (dir="auto") and numbers, names and quotes sit in <bdi>, so a right-to-left
// override (U+202E) inside them cannot reorder what the page says around them.
import { describe, expect, test } from "bun:test";
import { renderToStaticMarkup } from "react-dom/server";
import { MessageItem } from "../../src/console/conversations/message-item";

const RLO = "\u202e";
const record = {
  id: "msg_1",
  phone: "+14155550123",
  message: `pay to ${RLO}gnp.exe`,
  direction: "inbound",
  timestamp: "2026-11-21T09:30:00.000001Z",
  status: "received",
  reply_to: "msg_0",
  media: [],
  reactions: [{ reaction: "love", direction: "inbound", phone: `+1415${RLO}5550199`, timestamp: "2026-11-21T09:30:00.000002Z" }],
  read_at: null,
  edited_at: null,
  unsent_at: null,
  chat_id: "grp_1",
  error: `network said ${RLO}oops`,
} as const;

describe("a message as the console shows it", () => {
  const html = renderToStaticMarkup(
    <MessageItem message={record as never} repliesTo={{ ...record, id: "msg_0", message: `earlier ${RLO}txet` } as never} showRead={false} showSender capabilities={undefined} />,
  );

  test("its text is isolated with dir=auto", () => {
    expect(html).toMatch(new RegExp(`<p[^>]*dir="auto"[^>]*>pay to ${RLO}gnp\\.exe</p>`));
  });

  test("the sender's number, the reacting number, the quoted reply and the error are each in <bdi>", () => {
    expect(html).toContain("From <bdi>+14155550123</bdi>");
    expect(html).toContain(`<bdi>+1415${RLO}5550199</bdi>`);
    expect(html).toContain(`<bdi>“earlier ${RLO}txet”</bdi>`);
    expect(html).toContain(`<bdi>network said ${RLO}oops</bdi>`);
  });
});
