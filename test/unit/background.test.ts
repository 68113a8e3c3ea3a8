import { describe, expect, test } from "bun:test";
import { keepTrying, repeatEvery, writeOrRetry } from "../../src/background";
import { createLogger } from "../../src/log";

function recordingLog() {
  const lines: { level: string; msg: string; error?: string }[] = [];
  const log = createLogger("debug", {}, (line) => lines.push(JSON.parse(line)));
  return { log, lines };
}

/** Waits (bounded) until `check` holds. */
async function until(check: () => boolean, ms = 5_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await Bun.sleep(10);
  }
}

describe("repeatEvery", () => {
  test("a task that throws is logged and tried again sooner, and never throws out", async () => {
    const { log, lines } = recordingLog();
    let calls = 0;
    const task = repeatEvery("maintenance", 60_000, () => {
      calls++;
      if (calls < 3) throw new Error("database is locked");
    }, log);
    try {
      await until(() => calls >= 3);
      expect(lines.filter((l) => l.msg === "maintenance failed; will retry").map((l) => l.error)).toEqual(["database is locked", "database is locked"]);
    } finally {
      task.stop();
    }
  });
});

describe("keepTrying and writeOrRetry", () => {
  test("keepTrying retries until the task succeeds", async () => {
    const { log } = recordingLog();
    let calls = 0;
    const ok = await keepTrying("a write", () => {
      if (++calls < 3) throw new Error("busy");
    }, log);
    expect(ok).toBe(true);
    expect(calls).toBe(3);
  });

  test("keepTrying gives up after its limit, logging an error, without throwing", async () => {
    const { log, lines } = recordingLog();
    const ok = await keepTrying("a write", () => {
      throw new Error("busy");
    }, log, { giveUpAfterMs: 300 });
    expect(ok).toBe(false);
    expect(lines.some((l) => l.level === "error" && l.msg === "a write failed; giving up")).toBe(true);
  });

  test("writeOrRetry answers at once whether the write landed, and lands it later", async () => {
    const { log } = recordingLog();
    let fail = true;
    let written = false;
    expect(await writeOrRetry("a status", () => {
      if (fail) throw new Error("database is locked");
      written = true;
    }, log)).toBe(false);
    fail = false;
    await until(() => written);
  });
});
