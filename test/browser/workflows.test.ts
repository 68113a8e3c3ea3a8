// Workflows: the table, "Run now" and "Dry run" with their results, the runs
// (docs/console.md "Workflows").
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { assertAccessible, assertOwnHostOnly, ECHO_WORKFLOW, newPhone, signedInConsole, UI_MS, waitFor, waitForText } from "./support";

const FAILING = "crm-sync";
const FAILING_SOURCE = `export default {
  name: "${FAILING}",
  schedule: "0 0 0 1 1 *",
  async run() {
    throw new Error("the CRM did not answer");
  },
};
`;

const row = (page: Page, name: string) => page.getByRole("row", { name, exact: true });
const result = (page: Page) => page.getByRole("status").filter({ hasText: /run of/i });
const runsTable = (page: Page, name: string) => page.getByRole("region", { name: `Runs of ${name}` }).getByRole("table");

describe("workflows", () => {
  const app = signedInConsole({ workflows: { [`${FAILING}.mjs`]: FAILING_SOURCE }, page: "Workflows" });
  const phone = newPhone();

  test("the table lists each workflow with its schedule, time zone, next run and last result", async () => {
    const { page } = app.tab;
    const echo = row(page, ECHO_WORKFLOW);
    await echo.waitFor({ timeout: UI_MS });
    const text = (await echo.textContent()) ?? "";
    assert.ok(text.includes("0 0 0 1 1 *"), text);
    assert.ok(text.includes("UTC"), text);
    assert.ok(text.includes("Never run"), text);
    const next = await echo.locator("time").first().getAttribute("datetime");
    assert.match(next ?? "", /^\d{4}-01-01T00:00:00/, "the next run is on 1 January");
    await row(page, FAILING).waitFor({ timeout: UI_MS });
    await assertAccessible(page, "the Workflows page");
  });

  test("Dry run shows what it would send and sends nothing", async () => {
    const { page } = app.tab;
    await app.server.inbound(phone, "hello");
    await app.server.inbound(phone, "are you there?");
    await row(page, ECHO_WORKFLOW).getByRole("button", { name: "Dry run", exact: true }).click();
    const text = await waitForText(result(page), /Dry run of echo: ok, 2 handled[\s\S]*Echo: hello[\s\S]*Echo: are you there\?/);
    assert.ok(text.includes("Would send"), text);
    assert.deepEqual((await app.server.history(phone)).filter((m) => m.direction === "outbound"), []);
  });

  test("Run now runs it: the result, the replies sent (REST history has them), the runs and the last result", async () => {
    const { page } = app.tab;
    await row(page, ECHO_WORKFLOW).getByRole("button", { name: "Run now", exact: true }).click();
    await waitForText(result(page), /Run of echo: ok, 2 handled[\s\S]*Sent[\s\S]*Echo: hello[\s\S]*Echo: are you there\?/);
    const history = await app.server.history(phone);
    const replies = history.filter((m) => m.direction === "outbound").map((m) => m.message).sort();
    assert.deepEqual(replies, ["Echo: are you there?", "Echo: hello"]);
    // Newest first: the run, then the dry run.
    const runs = runsTable(page, ECHO_WORKFLOW).locator("tbody tr");
    await waitFor("two runs", async () => (await runs.count()) === 2);
    assert.match((await runs.nth(0).textContent()) ?? "", /^ok\s*manual\s*No.*2/);
    assert.match((await runs.nth(1).textContent()) ?? "", /^ok\s*manual\s*Yes.*2/);
    await waitForText(row(page, ECHO_WORKFLOW), /ok, 2 handled/);
    await assertAccessible(page, "the Workflows page with a result and runs");
  });

  test("the cursor moved: Run now again handles nothing", async () => {
    const { page } = app.tab;
    await row(page, ECHO_WORKFLOW).getByRole("button", { name: "Run now", exact: true }).click();
    await waitForText(result(page), /Run of echo: ok, 0 handled/);
  });

  test("a failing workflow's error is shown in the result, its runs and its row", async () => {
    const { page } = app.tab;
    await row(page, FAILING).getByRole("button", { name: "Run now", exact: true }).click();
    await waitForText(result(page), /Run of crm-sync: error[\s\S]*the CRM did not answer/);
    const runs = runsTable(page, FAILING).locator("tbody tr");
    await waitForText(runs.first(), /error[\s\S]*manual[\s\S]*the CRM did not answer/);
    await waitForText(row(page, FAILING), /error[\s\S]*the CRM did not answer/);
  });

  test("the pages requested nothing from any host but the server, without page errors or CSP refusals", () => {
    assertOwnHostOnly(app.tab);
  });
});
