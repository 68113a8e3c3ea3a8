// `bun run screenshots`: docs/console/{sign-in,conversations,workflows,webhooks,keys}.png at
// 1280x800, from a real server seeded with a few conversations (a failed message, an
// image, a threaded reply), workflows with runs, a webhook endpoint with deliveries and two
// keys. Run under Node by test/browser/run.ts, with the tests' launcher (support.ts).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { goTo, launchBrowser, openConsole, ROOT, signIn, startFileServer, startReceiver, startServer, UI_MS, waitFor } from "./support";

const OUT = join(ROOT, "docs", "console");

const DAILY_SUMMARY = `export default {
  name: "daily-summary",
  schedule: "0 18 * * 1-5",
  timezone: "Europe/Madrid",
  async run(ctx) {
    const inbound = await ctx.poll();
    ctx.log.info("today's inbound messages", { count: inbound.length });
  },
};
`;

/** A photo-like picture for the inbound image: rendered by the browser itself, so nothing is fetched from elsewhere. */
async function picture(page: Page): Promise<Buffer> {
  await page.setViewportSize({ width: 480, height: 320 });
  await page.setContent(`<body style="margin:0;width:480px;height:320px;background:linear-gradient(160deg,#8ec5fc,#e0c3fc);font:600 28px sans-serif;display:grid;place-items:center;color:#234">
    <div style="background:#fffc;padding:24px 32px;border-radius:12px;box-shadow:0 6px 20px #0003">Parcel 4417 · damaged corner</div></body>`);
  return page.screenshot({ type: "png" });
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const browser = await launchBrowser();
  const receiver = await startReceiver();
  const server = await startServer({ env: { WEBHOOK_RETRY_SCHEDULE: "1" }, workflows: { "daily-summary.mjs": DAILY_SUMMARY } });
  const scratch = await browser.newPage();
  const files = await startFileServer({ "/parcel.png": { type: "image/png", bytes: await picture(scratch) } });
  await scratch.close();
  try {
    // The endpoint first, so the inbound messages below are delivered to it.
    const { endpoint: hook } = await server.api<{ endpoint: { id: string } }>("POST", "/api/webhook-endpoints", {
      url: receiver.url,
      description: "CRM sync",
      events: ["message.received"],
    });

    const ana = "+14155550123";
    const ben = "+442071838750";
    const chloe = "+34612345678";
    const dev = "+14155550199";
    await server.send(dev, "Your verification code is 482913.");
    await server.send(chloe, "Recordatorio: su cita es mañana a las 10:00.", { send_at: new Date(Date.now() + 1500).toISOString() });
    await server.inbound(chloe, "STOP");
    await waitFor("the scheduled reminder to fail", async () => (await server.history(chloe)).some((m) => m.status === "failed"), 15_000);
    await server.inbound(ben, "Hi, has order 8812 shipped yet?");
    await server.send(ben, "It left our warehouse this morning; tracking follows by email.");
    const question = await server.inbound(ana, "Hello! My parcel arrived with a damaged corner, see the photo.", { media: [{ url: `${files.url}/parcel.png` }] });
    await server.send(ana, "Sorry about that! We will send a replacement today.", { reply_to: question.message_id });
    // The receiver is down for this one: its delivery fails (the newest row of Deliveries).
    receiver.status = 500;
    await server.inbound(ana, "Thank you, that was quick.");
    await waitFor(
      "the delivery to fail for good",
      async () => (await server.api<{ deliveries: { state: string }[] }>("GET", `/api/webhook-endpoints/${hook.id}/deliveries`)).deliveries.some((d) => d.state === "failed"),
      15_000,
    );
    receiver.status = 200;
    await server.send(dev, "Your appointment is tomorrow at 10.", { send_at: new Date(Date.now() + 86_400_000).toISOString() });

    await server.trpc("mutation", "workflows.run", { name: "echo", dry_run: true });
    await server.trpc("mutation", "workflows.run", { name: "daily-summary" });
    await server.trpc("mutation", "keys.create", { name: "ops-laptop" });
    await server.trpc("mutation", "keys.create", { name: "crm-integration" });

    const tab = await openConsole(browser, server);
    const { page } = tab;
    await page.getByLabel("API key", { exact: true }).waitFor({ timeout: UI_MS });
    await page.screenshot({ path: join(OUT, "sign-in.png") });

    await signIn(page, server.key);
    await page.goto(`/console/conversations/${encodeURIComponent(ana)}`);
    await page.getByRole("list", { name: `Messages with ${ana}` }).locator("img").evaluate((img: HTMLImageElement) => img.decode());
    await page.screenshot({ path: join(OUT, "conversations.png") });

    await goTo(page, "Workflows");
    await page.getByRole("row", { name: "echo", exact: true }).getByRole("button", { name: "Run now", exact: true }).click();
    await page.getByRole("region", { name: "Runs of echo" }).getByRole("table").waitFor({ timeout: UI_MS });
    await page.getByRole("status").filter({ hasText: /Run of echo/ }).waitFor({ timeout: UI_MS });
    await page.screenshot({ path: join(OUT, "workflows.png") });

    await goTo(page, "Webhooks");
    const endpoint = page.getByRole("region", { name: receiver.url, exact: true });
    await endpoint.getByRole("button", { name: "Deliveries", exact: true }).click();
    const table = endpoint.getByRole("table");
    await table.getByRole("button", { name: "Retry", exact: true }).first().waitFor({ timeout: UI_MS });
    // The endpoint's state and actions at the top, its deliveries below.
    await endpoint.getByRole("button", { name: "Disable", exact: true }).evaluate((el) => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 110));
    await page.screenshot({ path: join(OUT, "webhooks.png") });

    await goTo(page, "Keys");
    await page.getByRole("row", { name: "crm-integration", exact: true }).waitFor({ timeout: UI_MS });
    await page.screenshot({ path: join(OUT, "keys.png") });
    console.log(`wrote sign-in, conversations, workflows, webhooks and keys .png to ${OUT}`);
  } finally {
    await browser.close();
    await server.stop();
    await receiver.close();
    await files.close();
  }
}

await main();
