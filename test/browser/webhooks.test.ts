// Webhooks: create (the secret once), deliveries, Retry, Replay, disable, rotate, delete
// (docs/console.md "Webhooks"). The receiver is a node:http server on 127.0.0.1
// (ALLOW_PRIVATE_URLS=true), so deliveries are real.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { assertAccessible, assertOwnHostOnly, goTo, newPhone, signedInConsole, startReceiver, UI_MS, waitFor, waitForText, type Receiver } from "./support";

const SECRET = /whsec_[A-Za-z0-9+/=]{40,}/;
const endpoint = (page: Page, url: string) => page.getByRole("region", { name: url, exact: true });
/** The endpoint's deliveries table (shown by its "Deliveries" button), newest first. */
const deliveryRows = (page: Page, url: string) => endpoint(page, url).getByRole("table").locator("tbody tr");
/** Checks a delivery's signature against `secret` (standardwebhooks); throws when it does not verify. */
const verify = (secret: string, delivery: Receiver["deliveries"][number]) =>
  new Webhook(secret).verify(JSON.stringify(delivery.body), Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k, String(v)])));

describe("webhooks", () => {
  // One retry, a second after the first failure: a failing delivery is `failed` within seconds.
  const app = signedInConsole({ env: { WEBHOOK_RETRY_SCHEDULE: "1" }, page: "Webhooks" });
  let receiver: Receiver;
  let secret = "";
  const phone = newPhone();

  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver?.close();
  });

  test("Create endpoint adds it and shows its signing secret once, with a note", async () => {
    const { page } = app.tab;
    await page.getByRole("textbox", { name: "URL", exact: true }).fill(receiver.url);
    await page.getByRole("textbox", { name: "Description", exact: true }).fill("CRM sync");
    await page.getByRole("checkbox", { name: /^message\.received/ }).check();
    await page.getByRole("button", { name: "Create endpoint", exact: true }).click();
    secret = SECRET.exec(await waitForText(page.getByRole("status").filter({ hasText: SECRET }), SECRET))![0];
    await page.getByText(/not shown again/).first().waitFor({ timeout: UI_MS });
    const section = endpoint(page, receiver.url);
    const text = await waitForText(section, /Enabled/);
    assert.ok(text.includes("CRM sync"), text);
    assert.match(text, /Events:\s*message\.received(?!,)/);
    const { endpoints } = await app.server.api<{ endpoints: { url: string; events: string[]; enabled: boolean }[] }>("GET", "/api/webhook-endpoints");
    assert.deepEqual(endpoints.map((e) => [e.url, e.events, e.enabled]), [[receiver.url, ["message.received"], true]]);
    await assertAccessible(page, "the Webhooks page with a new endpoint");
  });

  test("the secret is not shown again after leaving the page", async () => {
    const { page } = app.tab;
    await goTo(page, "Keys");
    await goTo(page, "Webhooks");
    await endpoint(page, receiver.url).waitFor({ timeout: UI_MS });
    assert.ok(!(await page.content()).includes(secret));
  });

  test("an event is delivered, signed with the secret shown; Deliveries lists it succeeded", async () => {
    const { page } = app.tab;
    await app.server.inbound(phone, "Where is my parcel?");
    const delivery = await waitFor("the delivery", () => receiver.deliveries[0]);
    assert.equal(delivery.body.type, "message.received");
    assert.equal(delivery.body.data.message, "Where is my parcel?");
    assert.doesNotThrow(() => verify(secret, delivery), "the signature verifies with the secret shown");
    await endpoint(page, receiver.url).getByRole("button", { name: "Deliveries", exact: true }).click();
    await waitForText(deliveryRows(page, receiver.url).first(), /message\.received\s*succeeded\s*1\s*200/);
    await assertAccessible(page, "the deliveries table");
  });

  test("a delivery that failed for good shows its error, and Retry sends it again", async () => {
    const { page } = app.tab;
    receiver.status = 500;
    const before = receiver.deliveries.length;
    await app.server.inbound(phone, "Hello again");
    const row = deliveryRows(page, receiver.url).first();
    await waitForText(row, /message\.received\s*failed\s*2\s*500[\s\S]*HTTP 500/, 15_000);
    assert.equal(receiver.deliveries.length, before + 2);
    receiver.status = 200;
    await row.getByRole("button", { name: "Retry", exact: true }).click();
    await waitForText(row, /message\.received\s*succeeded\s*1\s*200/);
    assert.equal(receiver.deliveries.length, before + 3);
    assert.equal(receiver.deliveries.at(-1)?.body.data.message, "Hello again");
  });

  test("Replay, since 24 h ago by default, queues every event again and says how many", async () => {
    const { page } = app.tab;
    const section = endpoint(page, receiver.url);
    const since = await section.getByLabel("Replay since", { exact: true }).inputValue();
    const hoursAgo = (Date.now() - new Date(since).getTime()) / 3_600_000;
    assert.ok(hoursAgo > 23.9 && hoursAgo < 24.1, `Replay since defaults to ${since}, ${hoursAgo.toFixed(2)} h ago`);
    const ids = new Set(receiver.deliveries.map((d) => d.headers["webhook-id"]));
    const before = receiver.deliveries.length;
    await section.getByRole("button", { name: "Replay", exact: true }).click();
    await section.getByRole("status").filter({ hasText: "Queued 2 deliveries again." }).waitFor({ timeout: UI_MS });
    await waitFor("two deliveries more", () => receiver.deliveries.length === before + 2);
    assert.ok(receiver.deliveries.slice(before).every((d) => ids.has(d.headers["webhook-id"])), "a replay sends the same events (same webhook-id)");
  });

  test("Disable stops deliveries; Enable brings the endpoint back", async () => {
    const { page } = app.tab;
    const section = endpoint(page, receiver.url);
    await section.getByRole("button", { name: "Disable", exact: true }).click();
    await waitForText(section, /State:\s*Disabled/);
    const get = async () => (await app.server.api<{ endpoints: { enabled: boolean }[] }>("GET", "/api/webhook-endpoints")).endpoints[0]?.enabled;
    assert.equal(await get(), false);
    await section.getByRole("button", { name: "Enable", exact: true }).click();
    await waitForText(section, /State:\s*Enabled/);
    assert.equal(await get(), true);
  });

  test("Rotate secret shows a new secret once, and deliveries are signed with it", async () => {
    const { page } = app.tab;
    const section = endpoint(page, receiver.url);
    await section.getByRole("button", { name: "Rotate secret", exact: true }).click();
    const rotated = SECRET.exec(await waitForText(section.getByRole("status").filter({ hasText: SECRET }), SECRET))![0];
    assert.notEqual(rotated, secret);
    const before = receiver.deliveries.length;
    await app.server.inbound(phone, "After the rotation");
    const delivery = await waitFor("a delivery", () => receiver.deliveries[before]);
    assert.doesNotThrow(() => verify(rotated, delivery));
  });

  test("Delete asks first, then deletes the endpoint", async () => {
    const { page } = app.tab;
    await endpoint(page, receiver.url).getByRole("button", { name: "Delete", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Delete this endpoint?" });
    await dialog.waitFor({ timeout: UI_MS });
    await assertAccessible(page, "the delete dialog");
    await dialog.getByRole("button", { name: "Delete endpoint", exact: true }).click();
    await waitFor("the endpoint to go", async () => (await endpoint(page, receiver.url).count()) === 0);
    assert.deepEqual((await app.server.api<{ endpoints: unknown[] }>("GET", "/api/webhook-endpoints")).endpoints, []);
  });

  test("the pages requested nothing from any host but the server, without page errors or CSP refusals", () => {
    assertOwnHostOnly(app.tab);
  });
});
