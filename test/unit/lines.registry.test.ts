import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config";
import { AppError } from "../../src/errors";
import { openLines } from "../../src/lines/registry";
import { createSecrets, newSecretKey, parseSecretKey } from "../../src/secrets/seal";
import { dialects, quietLog, storages } from "./helpers";

for (const dialect of dialects) {
  const fresh = storages(dialect);
  describe(`the lines registry on ${dialect.name}`, () => {
    const secrets = createSecrets(parseSecretKey(newSecretKey()));
    const twilio = (credentials: string) => ({
      id: "ln_sales",
      name: "sales",
      network: "twilio" as const,
      address: "+14155550100",
      enabled: true,
      isDefault: false,
      fallback: null,
      settings: JSON.stringify({ account_sid: `AC${"0".repeat(32)}` }),
      credentials,
      managed: "api" as const,
    });

    test("writes the environment's line and reads a change made elsewhere only when a version moved", async () => {
      const storage = await fresh();
      const config = loadConfig({ DATABASE_URL: ":memory:", PUBLIC_URL: "https://tw.example.com" });
      const a = await openLines({ config, log: quietLog, storage, secrets });
      const b = await openLines({ config, log: quietLog, storage, secrets });
      expect(a.all().map((l) => [l.row.id, l.row.managed, l.row.isDefault])).toEqual([["ln_default", "env", true]]);
      const envDriver = b.get("ln_default").driver;
      expect(await b.refresh()).toBe(false);
      await storage.lines.insert(twilio(secrets.seal('{"auth_token":"t"}')));
      expect(await b.refresh()).toBe(true);
      expect(b.find("sales")?.driver.name).toBe("twilio");
      // Unchanged lines keep their driver.
      expect(b.get("ln_default").driver).toBe(envDriver);
      expect(await b.refresh()).toBe(false);
    });

    test("a line this process cannot build is listed, and refuses naming why (here: no PUBLIC_URL; there: credentials that do not open)", async () => {
      const storage = await fresh();
      await storage.lines.insert(twilio(secrets.seal('{"auth_token":"t"}')));
      const withoutUrl = await openLines({ config: loadConfig({ DATABASE_URL: ":memory:" }), log: quietLog, storage, secrets });
      const line = withoutUrl.find("sales")!;
      expect(line.row.name).toBe("sales");
      const refused = await line.driver.send({ id: "m1", phone: "+14155550123", text: "hi" }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(AppError);
      expect((refused as AppError).message).toBe("line: the line sales cannot be used by this process: PUBLIC_URL is not set, and Twilio needs it for the line's webhooks");
      expect((await line.driver.check!()).ok).toBe(false);
      const otherKey = await openLines({ config: loadConfig({ DATABASE_URL: ":memory:", PUBLIC_URL: "https://tw.example.com" }), log: quietLog, storage, secrets: createSecrets(parseSecretKey(newSecretKey())) });
      expect((await otherKey.find("sales")!.driver.check!()).detail).toContain("SECRET_KEY");
    });
  });
}
