import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createBlueBubblesNetwork } from "../../src/network/bluebubbles";
import type { NetworkDriver } from "../../src/network/driver";
import { createLoopbackNetwork } from "../../src/network/loopback";
import { createTwilioNetwork } from "../../src/network/twilio";
import { HTTP_STATUS } from "../../src/api/errors";
import { CAPABILITIES, type Capability } from "../../src/vocabulary/network";
import { anchorsOf, brokenLinks, markdownFiles, slug, tablesOf } from "../support/docs";

const root = join(import.meta.dir, "../..");
const read = (path: string) => readFileSync(path, "utf8");
const documents = [join(root, "README.md"), ...markdownFiles(join(root, "docs")), ...markdownFiles(join(root, "bench"))];

describe("links in README.md and docs/", () => {
  test("every relative link names a file that exists, and every anchor a heading of it", () => {
    expect(brokenLinks(root, documents, read)).toEqual([]);
  });

  test("a link to a missing file or heading is reported, with its line", () => {
    const files: Record<string, string> = {
      [join(root, "README.md")]: read(join(root, "README.md")),
      [join(root, "docs/fake.md")]: [
        "# Fake",
        "## Idempotency keys",
        "[ok](#idempotency-keys) [ok too](../README.md#quick-start)",
        "[gone](api.md#idempotency)",
        "[no file](nothing-here.md)",
        "```sh",
        "# not a heading; [not a link](nowhere.md)",
        "```",
        "[own](#no-such-heading)",
      ].join("\n"),
    };
    const broken = brokenLinks(root, [join(root, "docs/fake.md")], (path) => files[path] ?? read(path), (path) => path in files || existsSync(path));
    expect(broken).toEqual([
      "docs/fake.md:4: api.md#idempotency (no heading #idempotency in docs/api.md)",
      "docs/fake.md:5: nothing-here.md (no file docs/nothing-here.md)",
      "docs/fake.md:9: #no-such-heading (no heading #no-such-heading in docs/fake.md)",
    ]);
  });

  test("anchors are made as GitHub makes them", () => {
    expect(slug("The client address and `TRUSTED_PROXIES`")).toBe("the-client-address-and-trusted_proxies");
    expect(slug("Inbound messages: POST /webhooks/…")).toBe("inbound-messages-post-webhooks");
    expect(slug("Send a message — `POST /api/send`")).toBe("send-a-message--post-apisend");
    expect([...anchorsOf("## Sends\n## Sends\n```\n## Sends\n```")]).toEqual(["sends", "sends-1"]);
  });
});

/** Each driver, built with settings that reach nothing: only what it declares is read. */
const drivers: NetworkDriver[] = [
  createLoopbackNetwork(),
  createTwilioNetwork({ accountSid: "AC00000000000000000000000000000000", authToken: "token", from: "+14155550100", apiUrl: "http://127.0.0.1:9", publicUrl: "http://127.0.0.1:9", sendTimeoutMs: 1000 }),
  createBlueBubblesNetwork({ url: "http://127.0.0.1:9", password: "password", webhookSecret: "secret-secret-secret-secret", service: "iMessage", sendTimeoutMs: 1000 }),
];

/** A column's capability: "read receipts" and `read_receipts` both name read_receipts. */
const capabilityOf = (column: string): Capability | undefined => CAPABILITIES.find((c) => c === column.toLowerCase().replace(/ /g, "_"));

/**
 * Every table of README.md and docs/ with a `network` column and capability columns: what each
 * of its cells says ("yes…" or "no…") about a driver, beside what the driver declares.
 */
function capabilityClaims(files: string[], readFile: (path: string) => string) {
  const claims: { where: string; network: string; capability: Capability; documented: boolean; declared: boolean | undefined }[] = [];
  for (const file of files) {
    for (const table of tablesOf(readFile(file))) {
      if (table.header[0]?.toLowerCase() !== "network") continue;
      for (const row of table.rows) {
        const driver = drivers.find((d) => d.name === row[0]!.toLowerCase());
        table.header.forEach((column, i) => {
          const capability = capabilityOf(column);
          const answer = /^(yes|no)\b/i.exec(row[i] ?? "")?.[1]?.toLowerCase();
          if (!capability || !answer) return;
          claims.push({
            where: `${file.slice(root.length + 1)}:${table.line} (${row[0]}, ${column})`,
            network: row[0]!.toLowerCase(),
            capability,
            documented: answer === "yes",
            declared: driver?.capabilities[capability],
          });
        });
      }
    }
  }
  return claims;
}

const contradictions = (claims: ReturnType<typeof capabilityClaims>) => claims.filter((c) => c.documented !== c.declared).map((c) => `${c.where}: documented ${c.documented ? "yes" : "no"}, the driver declares ${c.declared}`);

describe("network capabilities in README.md and docs/", () => {
  test("each table's yes and no is what the driver declares", () => {
    expect(contradictions(capabilityClaims(documents, read))).toEqual([]);
  });

  test("every driver's every capability is in README.md's table and in docs/networks.md's", () => {
    for (const file of ["README.md", "docs/networks.md"]) {
      const claims = capabilityClaims([join(root, file)], read);
      for (const driver of drivers) {
        const listed = new Set(claims.filter((c) => c.network === driver.name).map((c) => c.capability));
        expect({ file, network: driver.name, listed: [...listed].sort() }).toEqual({ file, network: driver.name, listed: [...CAPABILITIES].sort() });
      }
    }
  });

  test("a cell that contradicts its driver is reported", () => {
    const file = join(root, "docs/fake.md");
    const table = ["| network | groups | read receipts | how |", "| --- | --- | --- | --- |", "| loopback | no | yes | x |", "| Twilio | no | yes (never) | y |"].join("\n");
    expect(contradictions(capabilityClaims([file], () => table))).toEqual([
      "docs/fake.md:1 (loopback, groups): documented no, the driver declares true",
      "docs/fake.md:1 (Twilio, read receipts): documented yes, the driver declares false",
    ]);
  });
});

describe("README.md's first hour", () => {
  test("names every route that takes no API key, and every error status", () => {
    const readme = read(join(root, "README.md"));
    const usingTheApi = readme.slice(readme.indexOf("## Using the API"), readme.indexOf("### Send a message"));
    for (const path of ["/health", "/health/live", "/health/ready", "/metrics", "/openapi.json", "/docs", "/console", "/media/:id"]) expect(usingTheApi).toContain(`${path}\``);
    const errors = tablesOf(readme).find((t) => t.header.join() === "status,code,when")!;
    expect(errors.rows.map((r) => [Number(r[0]), r[1]])).toEqual(Object.entries(HTTP_STATUS).map(([code, status]) => [status, code]));
  });

  test("its examples use the $TEXTWIRE and $KEY it sets", () => {
    const readme = read(join(root, "README.md"));
    expect(readme).toContain("export TEXTWIRE=http://127.0.0.1:3000");
    expect(readme).toContain("export KEY=tw_");
    const curls = readme.split("\n").filter((line) => /^curl /.test(line) || /^\s+-H "Authorization/.test(line));
    expect(curls.filter((line) => line.includes("$API_KEY") || /curl .*http:\/\/127\.0\.0\.1:3000\/api/.test(line))).toEqual([]);
  });
});
